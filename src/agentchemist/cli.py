"""`agentchemist`: the command line. One parser for every verb (`agentchemist -h`, `agentchemist VERB -h`,
`agentchemist --version`); one exit-code table for all of them (agentchemist.exit_codes, docs/reference/cli.md).

    agentchemist plan "<instruction>" [--scene FILE] [--json]   plan, refusal or question (no ROS needed)
    agentchemist run ["<instruction>"] [--scenario F] [--runs D] [--rtf X]   through the node graph in the twin
    agentchemist console [--attach] [--port P]                   the browser console: watch, pause, stop a run
    agentchemist report RUN_DIR                                  regenerate a run's report from its database
    agentchemist analyze FILE --analyte A ...                    report on a measured curve from a CSV/TSV file
    agentchemist export RUN_DIR [--formats csv parquet]          a run's tables as CSV / Parquet
    agentchemist calibrate --twin [--rate MM_S] [--out FILE]     gravimetric pipette calibration in the twin
    agentchemist ph-calibrate PROBE --point B:V:T ...            pH electrode calibration from 2-3 buffers
    agentchemist bag {record,info,play} ...                      rosbag2 bags without rosbag2
    agentchemist scenario run FILE... [--seeds N] [--json OUT]   score scenarios through the graph in the twin
    agentchemist policy {record,train} ...                       VLA demonstrations and training
    agentchemist doctor [--profile robot|twin]                   readiness: CAN, topics, calibrations, clocks

`run`, `console`, `bag` and `scenario` need the ROS 2 environment (`make shell` or `. scripts/env.sh`); they
hand over to the ROS package's tools so that this core package never imports ROS.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml
from rich.console import Console
from rich.markup import escape

from agentchemist import exit_codes


def _plan(args, console: Console) -> int:
    from agentchemist.plan import plan_instruction
    from agentchemist.plan.scene import SceneInfo

    scene = SceneInfo.from_dict(json.loads(Path(args.scene).read_text())) if args.scene else None
    outcome = plan_instruction(args.instruction, scene)
    if args.json:
        payload = {"kind": outcome.kind, "message": outcome.message, "reasons": list(outcome.reasons),
                   "plan": json.loads(outcome.plan.model_dump_json()) if outcome.plan else None}
        print(json.dumps(payload, indent=2))
    else:
        colour = {"plan": "green", "question": "yellow"}.get(outcome.kind, "red")
        console.print(f"[{colour}]{outcome.kind}[/{colour}]: {escape(outcome.message)}")
        for reason in outcome.reasons:
            if reason.strip() not in outcome.message:  # a one-reason refusal is its message: print it once
                console.print(f"  - {escape(reason)}")
        if outcome.plan is not None:
            p = outcome.plan
            console.print(f"experiment: {escape(p.parsed_instruction.experiment_name)}")
            console.print("states: " + " -> ".join(p.state_machine.states))
            for task in p.task_decomposition:
                console.print(f"  {task.id:<22} {task.receiver:<22} {escape(task.description)}")
            for warning in p.warnings:
                console.print(f"  [yellow]warning[/yellow]: {escape(warning)}")
    return 0 if outcome.kind == "plan" else 1


def _report(args, console: Console) -> int:
    from agentchemist.report.from_store import regenerate_report

    if args.replicates:  # agentchemist/analyze_cli.py: each run's report, then the replicate statistics
        from agentchemist.analyze_cli import replicates
        return replicates(args, console)
    if len(args.run_dir) > 1:
        raise ValueError(f"{len(args.run_dir)} runs given: one run folder, or add --replicates to summarise several")
    run_dir = Path(args.run_dir[0])
    if run_dir.is_file():  # `agentchemist report runs/<id>/records.db`: the folder is meant
        run_dir = run_dir.parent
    from agentchemist.record.recording import SPILL_NAME, unreplayed_spill

    # Rows the database could not take while the run was recorded wait in a spill file in the run folder;
    # opening the store replays them when the database takes them now.
    spills = [run_dir / SPILL_NAME, run_dir / "records.db.spill.jsonl"]
    before = [unreplayed_spill(p) for p in spills]
    paths = regenerate_report(run_dir, args.store, args.experiment)
    for had, spill in zip(before, spills):
        left = unreplayed_spill(spill)
        if left:
            console.print(f"[yellow]warning:[/yellow] {left}; the report lacks them until the database "
                          "takes them (run this command again then)")
        elif had:
            console.print(f"{had.split(' ')[0]} records left in {spill.name} by the run are now in the database")
    console.print(f"report: {paths.markdown}\n        {paths.html}\n        {paths.json}")
    for name, path in sorted(paths.charts.items()):
        console.print(f"  chart {name}: {path}")
    for name, path in sorted(paths.tables.items()):
        console.print(f"  table {name}: {path}")
    return 0


def _export(args, console: Console) -> int:
    from agentchemist.record import export_run, open_store

    run_dir = Path(args.run_dir)
    if not args.store and not (run_dir / "records.db").is_file():  # never create a folder or a database
        raise ValueError(f"{run_dir}: no records.db here, so there is no run to export")
    store = open_store(args.store or str(run_dir / "records.db"))
    try:
        experiment = args.experiment or store.experiments()[-1]["experiment_id"]
        written = export_run(store, experiment, args.out or run_dir / "export", formats=tuple(args.formats))
    finally:
        store.close()
    for fmt, files in written.items():
        console.print(f"{fmt}: {len(files)} files in {files[0].parent if files else '-'}")
    return 0


def _calibrate(args, console: Console) -> int:
    from agentchemist.control.calibration import fit_calibration, save_calibration
    from agentchemist.paths import config_dir
    from agentchemist.sim.calibration_run import calibration_samples
    from agentchemist.sim.scenario import load_scenario

    if not args.twin:
        console.print("[red]only --twin calibration runs from the command line; on the robot use the "
                      "dispenser_controller's Calibrate service[/red]")
        return exit_codes.USAGE
    scenario = load_scenario(args.scenario or config_dir() / "scenarios" / "calibration_naoh.yaml")
    samples = calibration_samples(scenario, rate_mm_s=args.rate, samples=args.samples)
    titrant = ", ".join(f"{name} {conc} M" for name, conc in scenario.titrant.items())
    cal = fit_calibration(samples, density_g_ml=args.density, rate_mm_s=args.rate, liquid=titrant,
                          pipette_id=args.pipette)
    for s in samples:
        console.print(f"  {s.displacement_mm:7.3f} mm  {s.mass_g:6.2f} g  {s.drops:4d} drops")
    console.print(f"k = {cal.k_ml_per_mm:.4f} mL/mm, drop = {cal.drop_volume_ml:.5f} mL "
                  f"(sd {cal.drop_volume_sd_ml:.5f}), residual {cal.residual_ml:.4f} mL")
    console.print(f"saved to {save_calibration(cal, args.out)}")
    return 0


def _run(args, console: Console) -> int:
    from agentchemist.console.runs import user_runs_dir
    argv = ["--runs", str(args.runs or user_runs_dir()), "--rtf", str(args.rtf), "--timeout", str(args.timeout)]
    if args.instruction:
        argv += ["--instruction", args.instruction]
    if args.scenario:
        argv += ["--scenario", args.scenario]
    return _hand_over("agentchemist_ros.tools.demo", argv, console)


def _hand_over(module: str, module_args: list[str], console: Console) -> int:
    """Replace this process with the ROS package's tool (this core package never imports ROS)."""
    import importlib.util
    if importlib.util.find_spec("agentchemist_ros") is None:
        Console(stderr=True).print("[red]error:[/red] the ROS 2 environment is not set up: run `make shell` "
                                   "(or `. scripts/env.sh`) first")
        return exit_codes.NO_ENVIRONMENT
    os.execv(sys.executable, [sys.executable, "-m", module, *module_args])
    return 0  # not reached


SCENARIO_USAGE = ("usage: agentchemist scenario run FILE... [--seeds N] [--jobs J] [--json OUT]\n\n"
                  "Run scenario files through the node graph in the twin and score each run against the file's "
                  "`expected` block\n(docs/scenarios.md). agentchemist scenario run -h lists every option.")


def _scenario(scenario_args: list[str], console: Console) -> int:
    if scenario_args[:1] in (["-h"], ["--help"]):
        print(SCENARIO_USAGE)
        return exit_codes.OK
    if scenario_args[:1] != ["run"]:
        Console(stderr=True).print(f"[red]error:[/red] {escape(SCENARIO_USAGE.splitlines()[0])}")
        return exit_codes.USAGE
    return _hand_over("agentchemist_ros.tools.scenario_runner", scenario_args[1:], console)


def _console(console_args: list[str], console: Console) -> int:
    """The browser console (agentchemist_ros.tools.console): its runs go where `run`'s go."""
    from agentchemist.console.runs import user_runs_dir
    has_runs = any(a == "--runs" or a.startswith("--runs=") for a in console_args)
    extra = [] if has_runs or console_args[:1] in (["-h"], ["--help"]) else ["--runs", str(user_runs_dir())]
    return _hand_over("agentchemist_ros.tools.console", [*console_args, *extra], console)


def _ph_calibrate(args, console: Console) -> int:
    """Electrode calibration from buffer readings; stored per probe in the user's store (not the repo)."""
    import time as _time
    from agentchemist.hardware.instruments import electrode
    points = []
    if args.port:
        points = _ph_measure(args, console)
    for text in args.point or []:
        try:
            buffer, value, temperature = (float(x) for x in text.split(":"))
        except ValueError:
            raise ValueError(f"--point {text!r}: expected BUFFER:VALUE:TEMPERATURE, e.g. 7.00:-3.1:24.5") from None
        mv = value if args.unit == "mV" else electrode.mv_from_ideal_ph(value, temperature)
        points.append(electrode.BufferPoint(buffer, mv, temperature))
    acceptance = electrode.Acceptance(offset_max_mv=args.offset_max_mv, slope_low_pct=args.slope_low_pct,
                                      slope_high_pct=args.slope_high_pct)
    try:
        cal = electrode.calibrate(args.probe, points, now=_time.time(), acceptance=acceptance)
    except electrode.CalibrationError as exc:
        console.print(f"[red]refused:[/red] {escape(str(exc))}")
        return exit_codes.NO
    store = electrode.CalibrationStore(args.file)
    store.save(cal)
    console.print(f"probe {cal.probe}: slope {cal.slope_pct:.1f} % of Nernst, offset {cal.offset_mv:+.1f} mV "
                  f"({len(points)} buffers at {cal.temperature_c:.1f} degC) -> {store.path}")
    return 0


def _ph_measure(args, console: Console) -> list:
    """The buffers measured at the meter over its serial line (agentchemist.hardware.instruments.procedure)."""
    import time as _time
    from agentchemist.hardware.instruments.link import InstrumentLink
    from agentchemist.hardware.instruments.ph_dialects import PH_DIALECTS
    from agentchemist.hardware.instruments.port import SerialLine
    from agentchemist.hardware.instruments.procedure import measure_buffers
    if args.dialect not in PH_DIALECTS:
        raise ValueError(f"--dialect {args.dialect!r}: one of {sorted(PH_DIALECTS)}")
    line = SerialLine(InstrumentLink(PH_DIALECTS[args.dialect](), name="ph-calibrate", poll_period_s=0.5), args.port)

    def prompt(buffer):
        console.print(f"Rinse the electrode, put it in the [bold]pH {buffer:.2f}[/bold] buffer and stir; "
                      "press Enter when it is in")
        try:
            input()
        except (EOFError, KeyboardInterrupt):
            raise ValueError("calibration cancelled: no answer at the prompt (nothing stored)") from None
        console.print("waiting for a stable reading ...")
    line.service(_time.monotonic())
    if line.port is None:
        raise ValueError(f"cannot open the meter's serial port {args.port} (nothing stored)")
    try:
        return measure_buffers(line, args.buffers, prompt, _time.monotonic, _time.sleep)
    finally:
        line.close()


def _doctor(doctor_args: list[str], console: Console) -> int:
    """Readiness check. With the ROS 2 environment: every check (agentchemist_ros.tools.doctor); without it,
    the checks that need no graph (CAN, calibrations), and the topics are reported as not checked."""
    import importlib.util
    if importlib.util.find_spec("agentchemist_ros") is not None:
        return _hand_over("agentchemist_ros.tools.doctor", doctor_args, console)
    import time as _time
    from agentchemist.hardware import readiness
    from agentchemist.hardware.instruments.electrode import CalibrationStore
    profile = readiness.load_profile(doctor_args[doctor_args.index("--profile") + 1]
                                     if "--profile" in doctor_args[:-1] else "robot")
    checks = readiness.can_checks(readiness.read_can_links(profile.can_interfaces),
                                   dict(zip(profile.can_interfaces, profile.can_bitrates)))
    checks += readiness.calibration_checks(profile.probes, CalibrationStore(), _time.time(), profile.acceptance)
    checks += [readiness.Check("topics", t.topic, readiness.SKIP, "not checked: no ROS 2 environment")
               for t in profile.topics]
    readiness.render(checks, console, title=f"agentchemist doctor ({profile.name}, no ROS)")
    return readiness.exit_code(checks)


#: verbs whose own command line (options and -h included) is another program's: everything after the verb goes there
PASS_THROUGH = {"bag": "record | info | play, and their options (agentchemist bag -h)",
                "scenario": "run FILE... [--seeds N] [--jobs J] [--json OUT] (agentchemist scenario run -h)",
                "policy": "record | train, and their options (agentchemist policy -h)",
                "doctor": "[--profile robot|twin] [--seconds S] [--strict] (agentchemist doctor -h)",
                "console": "[--attach] [--host H] [--port P] [--token T] [--scenario F] [--runs D] [--rtf X] "
                           "(agentchemist console -h)"}


def build_parser() -> argparse.ArgumentParser:
    from agentchemist import __version__
    parser = argparse.ArgumentParser(
        prog="agentchemist", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="AgentChemist ROS: plan chemistry instructions, run them through the node graph in the lab "
                    "twin or on the robot, watch and stop them in a browser, and report, calibrate, record and "
                    "score.",
        epilog="`run`, `console`, `bag` and `scenario` need the ROS 2 environment (`make shell` or "
               "`. scripts/env.sh`). Each command has its own help: agentchemist COMMAND -h.\n\n"
               + exit_codes.epilog())
    parser.add_argument("--version", action="version", version=f"agentchemist {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("plan", help="plan an instruction (prints the plan, a refusal or a question)")
    p.add_argument("instruction")
    p.add_argument("--scene", help="scene JSON: {objects: [{id, kind, ...}], preconditions: {...}}")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    r = sub.add_parser("report", help="regenerate the report of a stored run")
    r.add_argument("run_dir", nargs="+", help="a run folder (several with --replicates)")
    r.add_argument("--replicates", action="store_true",
                   help="the runs are replicates: mean, SD and RSD of every stated result (replicates.md/json)")
    r.add_argument("--out", help="with --replicates: where replicates.md/json go (default: beside the first run)")
    r.add_argument("--store", help="store URL (default RUN_DIR/records.db)")
    r.add_argument("--experiment", help="experiment id (default: the last one in the store)")
    e = sub.add_parser("export", help="export a stored run's tables to CSV and/or Parquet")
    e.add_argument("run_dir")
    e.add_argument("--formats", nargs="+", default=["csv", "parquet"], choices=["csv", "parquet"])
    e.add_argument("--out", help="output folder (default RUN_DIR/export)")
    e.add_argument("--store", help="store URL (default RUN_DIR/records.db)")
    e.add_argument("--experiment", help="experiment id (default: the last one in the store)")
    c = sub.add_parser("calibrate", help="gravimetric pipette calibration")
    c.add_argument("--twin", action="store_true", help="calibrate in the lab twin")
    c.add_argument("--scenario", help="calibration bench scenario (default config/scenarios/calibration_naoh.yaml)")
    c.add_argument("--rate", type=float, default=0.1, help="gripper closing rate (mm/s)")
    c.add_argument("--samples", type=int, default=12)
    c.add_argument("--density", type=float, default=1.0, help="liquid density (g/mL)")
    c.add_argument("--pipette", default="rubber_bulb_60ml")
    c.add_argument("--out", help="output file (default: the user's calibration store, "
                   "$AGENTCHEMIST_CALIBRATION_DIR or ~/.local/share/agentchemist/calibration/pipette.yaml; "
                   "the shipped config/calibration/pipette.yaml is never rewritten unless named here)")
    u = sub.add_parser("run", help="run an instruction through the node graph in the twin, then the report")
    u.add_argument("instruction", nargs="?", help="the chemist's sentence (default: the scenario's own)")
    u.add_argument("--scenario", help="the twin's bench (default config/scenarios/hcl_naoh.yaml)")
    u.add_argument("--runs", help="folder of the run folders (default $AGENTCHEMIST_RUNS or "
                                  "~/.local/share/agentchemist/runs; never the checkout unless named here)")
    u.add_argument("--rtf", type=float, default=0.0,
                   help="real-time factor to pace the twin at (default 0: as fast as the graph keeps up)")
    u.add_argument("--timeout", type=float, default=600.0, help="give up after this many wall seconds")
    b = sub.add_parser("bag", help="record, inspect and play rosbag2 bags", add_help=False)
    b.add_argument("rest", nargs=argparse.REMAINDER, help=PASS_THROUGH["bag"])
    s = sub.add_parser("scenario", help="run and score scenario files", add_help=False)
    s.add_argument("rest", nargs=argparse.REMAINDER, help=PASS_THROUGH["scenario"])
    k = sub.add_parser("ph-calibrate", help="pH electrode calibration from 2 or 3 buffers (4.01 / 7.00 / 10.01)")
    k.add_argument("probe", help="electrode id (the ph_meter node's probe_id)")
    k.add_argument("--point", action="append",
                   help="BUFFER:VALUE:TEMPERATURE, the stable reading in a buffer (repeat: 2 or 3 buffers)")
    k.add_argument("--port", help="measure at the meter instead: its serial device (asks for each buffer)")
    k.add_argument("--dialect", default="tps_continuous", help="the meter's protocol with --port")
    k.add_argument("--buffers", type=float, nargs="+", default=[4.01, 7.00, 10.01], help="buffers with --port")
    k.add_argument("--unit", choices=["mV", "pH"], default="mV",
                   help="VALUE is the electrode's mV, or the pH an uncalibrated meter shows (ideal electrode)")
    k.add_argument("--file", help="calibration store (default $AGENTCHEMIST_CALIBRATION_FILE, else electrodes.json "
                                  "in your calibration store beside the pipette's: $AGENTCHEMIST_CALIBRATION_DIR or "
                                  "~/.local/share/agentchemist/calibration)")
    k.add_argument("--slope-low-pct", type=float, default=95.0)
    k.add_argument("--slope-high-pct", type=float, default=105.0)
    k.add_argument("--offset-max-mv", type=float, default=30.0)
    d = sub.add_parser("doctor", help="readiness check: CAN, topics and rates, calibrations, clocks", add_help=False)
    d.add_argument("rest", nargs=argparse.REMAINDER, help=PASS_THROUGH["doctor"])
    o = sub.add_parser("console", help="the browser console: plan, start, watch, pause, resume, cancel, e-stop",
                       add_help=False)
    o.add_argument("rest", nargs=argparse.REMAINDER, help=PASS_THROUGH["console"])
    v = sub.add_parser("policy", help="the VLA action policy: record demonstrations, train", add_help=False)
    v.add_argument("rest", nargs=argparse.REMAINDER, help=PASS_THROUGH["policy"])
    from agentchemist import analyze_cli
    analyze_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    console = Console(soft_wrap=True)  # paths and messages are never broken across lines (piped or not)
    try:
        args, unknown = parser.parse_known_args(raw)
        if args.command in PASS_THROUGH:  # the verb's own program reads the rest, exactly as typed
            rest = raw[raw.index(args.command) + 1:]
            passed = {"bag": lambda: _hand_over("agentchemist_ros.tools.bag_cli", rest, console),
                      "scenario": lambda: _scenario(rest, console), "doctor": lambda: _doctor(rest, console),
                      "console": lambda: _console(rest, console), "policy": lambda: _policy(rest)}
            return passed[args.command]()
        if unknown:
            parser.parse_args(raw)  # argparse's own message and exit code 2 for what it did not recognise
        handlers = {"plan": _plan, "report": _report, "export": _export, "calibrate": _calibrate, "run": _run,
                    "ph-calibrate": _ph_calibrate, "analyze": analyze_cli_handler()}
        return handlers[args.command](args, console)
    except (ValueError, OSError, yaml.YAMLError) as exc:
        # on stderr, like any command line tool: scripts (and the summarizer's report child) read it there
        Console(stderr=True, soft_wrap=True).print(f"[red]error:[/red] {escape(str(exc))}")
        return exit_codes.USAGE
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        return exit_codes.INTERRUPTED


def analyze_cli_handler():
    from agentchemist import analyze_cli
    return analyze_cli.analyze


def _policy(policy_args: list[str]) -> int:
    """The VLA action policy's own command line (agentchemist/vla_cli.py)."""
    from agentchemist.vla_cli import main as policy_main
    return policy_main(policy_args)


if __name__ == "__main__":
    sys.exit(main())
