"""`agentchemist analyze FILE`: a measured titration curve from a file -> the report of a robot run.

    agentchemist analyze curve.csv --analyte "acetic acid" --analyte-volume 25 --titrant naoh \\
        --titrant-molarity 0.1 [--analyte-molarity M] [--increment burette|pump|dropper] [--out DIR] [--json OUT]

The file (CSV/TSV or a Vernier Logger Pro export, see :mod:`agentchemist.report.curve_file`) becomes a run labelled as imported data
(:mod:`agentchemist.report.imported`) and goes through the same analysis and report writer as a robot
run. Mistakes of the user (a missing file, an unknown reagent, a column that is not there) end with one
line on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["add_parser", "analyze", "replicates"]


def add_parser(sub) -> argparse.ArgumentParser:
    """Register `analyze` on the main parser's subparsers."""
    a = sub.add_parser("analyze", help="analyse a measured titration curve from a CSV/TSV file (imported data)",
                       description="Analyse pH against titrant volume measured elsewhere and write the same report "
                                   "as a robot run (md, html, json, charts), labelled as imported data.")
    a.add_argument("file", help="CSV or TSV with a header row: a volume column (unit in the header, else mL) and a "
                                "pH column")
    a.add_argument("--analyte", required=True, help="what was titrated: a reagent library name or alias")
    a.add_argument("--analyte-volume", type=float, required=True, metavar="ML", help="its volume (mL)")
    a.add_argument("--titrant", required=True, help="the titrant: a strong acid or base (e.g. naoh, hcl)")
    a.add_argument("--titrant-molarity", type=float, required=True, metavar="M", help="titrant concentration (mol/L)")
    a.add_argument("--titrant-rel-u", type=float, metavar="FRACTION",
                   help="relative standard uncertainty of the titrant concentration (default 0.005: standardised)")
    a.add_argument("--analyte-molarity", type=float, metavar="M",
                   help="the analyte's known concentration (a check sample); without it the concentration is the "
                        "result")
    a.add_argument("--increment", choices=["burette", "pump", "dropper"], default="burette",
                   help="how the titrant was added (its volume budget; default burette)")
    a.add_argument("--volume-column", help="the volume column's header text or 1-based position")
    a.add_argument("--ph-column", help="the pH column's header text or 1-based position")
    a.add_argument("--volume-unit", choices=["ml", "ul", "l"], help="the volume unit when the header names none")
    a.add_argument("--run", type=int, metavar="N", help="a Logger Pro export's run to analyse (default: the first)")
    a.add_argument("--temperature", type=float, metavar="C", help="temperature (degC) when the file has none")
    cal = a.add_mutually_exclusive_group()
    cal.add_argument("--electrode", metavar="PROBE",
                     help="the file's pH is what the meter showed with an ideal electrode: correct it with PROBE's "
                          "calibration stored by `agentchemist ph-calibrate` (else the electrode's offset and slope "
                          "are fitted with the curve)")
    cal.add_argument("--calibrated", action="store_true",
                     help="the meter was calibrated in buffers before the run: take its pH scale as calibrated "
                          "(else the electrode's offset and slope are fitted with the curve)")
    a.add_argument("--calibration-file", help="calibration store for --electrode (default: ph-calibrate's)")
    a.add_argument("--sample-id", help="sample id (default: import-<file stem>)")
    a.add_argument("--operator", help="who measured the curve")
    a.add_argument("--titer-date", help="when the titrant's concentration was determined (for the result sheet)")
    a.add_argument("--out", help="report folder (default: <file stem>_report beside the file)")
    a.add_argument("--json", metavar="OUT", help="also write the report's JSON here")
    return a


def _electrode(args, curve, run, options) -> None:
    """How far the file's pH scale can be trusted: a stored calibration applied, a calibrated meter, or
    neither, when the electrode's offset and slope are fitted with the curve (the analysis's electrode_fit)."""
    if args.electrode:
        from agentchemist.hardware.instruments.electrode import CalibrationStore
        store = CalibrationStore(args.calibration_file)
        cal = store.get(args.electrode)
        if cal is None:
            raise ValueError(f"--electrode {args.electrode!r}: no calibration of that probe in {store.path} "
                             "(`agentchemist ph-calibrate PROBE` stores one)")
        temperature = options.get("temperature_c", 25.0)
        for record in run.fused_records:
            if record["quantity"] == "ph_settled":
                record["value"] = cal.correct(record["value"], temperature)
        run.experiment["electrode"] = {"probe": cal.probe, "slope_pct": cal.slope_pct, "offset_mv": cal.offset_mv,
                                       "calibration_date": cal.date, "calibration_temperature_c": cal.temperature_c,
                                       "source": f"stored calibration ({store.path}) applied to the file's pH"}
    elif args.calibrated:
        run.experiment["electrode"] = {"source": "the meter's own calibration (stated by the user)"}
    else:
        options["config"] = {"electrode_fit": True}
        run.experiment["electrode"] = {"source": "no calibration relied on: offset and slope fitted with the curve"}


def analyze(args, console) -> int:
    """Read, analyse, write; returns the exit code (ValueError/OSError reach the caller's one-line handler)."""
    from agentchemist.report import write_report
    from agentchemist.report.curve_file import read_curve
    from agentchemist.report.imported import ImportRequest, imported_run

    curve = read_curve(args.file, volume_column=args.volume_column, ph_column=args.ph_column,
                       volume_unit=args.volume_unit, run=args.run)
    request = ImportRequest(analyte=args.analyte, analyte_volume_ml=args.analyte_volume, titrant=args.titrant,
                            titrant_m=args.titrant_molarity, analyte_m=args.analyte_molarity,
                            increment=args.increment, titrant_rel_u=args.titrant_rel_u,
                            temperature_c=args.temperature, sample_id=args.sample_id, operator=args.operator)
    run, options = imported_run(curve, request)
    _electrode(args, curve, run, options)
    if args.titer_date:
        run.experiment["titer_date"] = args.titer_date
    out = Path(args.out) if args.out else curve.path.with_name(f"{curve.path.stem}_report")
    paths = write_report(run, out, analysis_options=options)
    if args.json:
        target = Path(args.json)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(paths.json.read_text(encoding="utf-8"), encoding="utf-8")
    summary = json.loads(paths.json.read_text(encoding="utf-8"))
    for note in curve.notes:
        console.print(f"note: {note}")
    for item in summary.get("results") or []:
        d = item.get("decimals", 3)
        u = f" ± {item['u']:.{d}f}" if item.get("u") is not None else ""
        console.print(f"{item['quantity']}: {item['value']:.{d}f}{u} {item.get('unit') or ''}".rstrip())
    if not summary.get("results"):
        console.print("no result could be stated from these data (the report says why)")
    console.print(f"report: {paths.markdown}\n        {paths.html}\n        {paths.json}")
    if args.json:
        console.print(f"json:   {args.json}")
    return 0


def replicates(args, console) -> int:
    """`agentchemist report RUN RUN ... --replicates`: each stored run's report regenerated (a folder written by
    `analyze` already holds its report.json), then mean, SD and RSD per stated quantity (report.replicates)."""
    from agentchemist.report.from_store import STORE_NAME, regenerate_report
    from agentchemist.report.replicates import write_replicates

    folders = []
    for name in args.run_dir:
        folder = Path(name).parent if Path(name).is_file() and Path(name).name == STORE_NAME else Path(name)
        if (folder / STORE_NAME).is_file():
            regenerate_report(folder, None, None)
        folders.append(folder)
    out = Path(args.out) if args.out else folders[0].parent / "replicates"
    md, js = write_replicates(folders, out)
    summary = json.loads(js.read_text(encoding="utf-8"))
    for q in summary["quantities"]:
        rsd = f"{100 * q['rsd']:.2g} %" if q.get("rsd") is not None else "n/a"
        console.print(f"{q['quantity']}: mean {q['mean']:.5g} {q.get('unit') or ''}, SD {q['sd']:.2g}, RSD {rsd} "
                      f"(n = {q['n']})")
    console.print(f"replicates: {md}\n            {js}")
    return 0
