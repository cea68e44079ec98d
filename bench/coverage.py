"""Coverage of the stated 95 % intervals on twin titrations with known truth (issue 21 item 4).

Each run: one of the titration scenarios, titrated drop by drop by the twin's own chemistry, electrode and
pipette (agentchemist.sim.settled_titration: the rows the recorder gives the analysis in a graph run,
without the graph: about a second per run instead of one to three minutes), then analysed as the report
analyses it (activity=True, the scenario's titrant and analyte). Per seed the bench's hidden truth is drawn
from the distributions the uncertainty budget states (UncertaintyInputs and AnalysisConfig):
electrode offset and slope error, titrant concentration, the drop volume the dispenser counts with.
``--unperturbed`` adds the scenarios as written (a perfectly calibrated bench: only noise, lag and drop
scatter).

Truth compared against:
- pKa: the reagent library's thermodynamic pKa at 25 C (config/reagents.yaml), which the twin's beaker
  uses with Davies activities; the fit (activity=True) estimates the same thermodynamic constants, so
  no apparent/concentration pKa enters. The twin has no pKa temperature dependence and runs at 25 C.
- equivalence volume: the titrant volume truly delivered at the k-th equivalence, k c_a V_a / (c_t cap),
  with the true titrant concentration (not the label) and the true mean drop (not the counted one).
- analyte concentration: the scenario's.

Stated: the reported estimate (``best_pka``: supported, smallest uncertainty; the supported equivalence
points; the stated concentration) with its combined standard uncertainty u and interval +- k u (k = 2).
Per acid and parameter: n (runs where the value was stated), coverage (truth inside the interval),
median |error| / u. Unsupported values are counted, not scored.

Run:  . scripts/env.sh && python bench/coverage.py [--seeds 20] [--out bench/results/coverage.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: bench.provenance
from bench.provenance import commit  # noqa: E402
from agentchemist.chemistry.analysis import AnalysisConfig, UncertaintyInputs, analyze_titration
from agentchemist.chemistry.reagents import default_library
from agentchemist.paths import config_dir
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.settled_titration import Perturbation, settled_titration

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Case:
    scenario: str
    analyte: str
    target_ph: float
    max_volume_ml: float
    equivalents: int      # resolvable equivalence points (phosphoric: the third is not)


CASES = (
    Case("acetic_naoh", "acetic_acid", 12.0, 40.0, 1),
    Case("maleic_naoh", "maleic_acid", 12.0, 40.0, 2),
    Case("phosphoric_naoh", "phosphoric_acid", 11.0, 14.0, 2),
    Case("hcl_naoh", "hcl", 12.0, 40.0, 1),
)


def perturbation(seed: int, inputs: UncertaintyInputs, config: AnalysisConfig) -> Perturbation:
    rng = np.random.default_rng(100_000 + seed)
    return Perturbation(titrant_rel=inputs.titrant_rel_sd * rng.standard_normal(),
                        drop_volume_rel=inputs.drop_volume_rel_sd * rng.standard_normal(),
                        ph_offset=config.ph_calibration_sd * rng.standard_normal(),
                        ph_slope_rel=inputs.ph_slope_rel_sd * rng.standard_normal())


def one_run(case: Case, seed: int, perturbed: bool, inputs: UncertaintyInputs, config: AnalysisConfig) -> dict:
    scenario = load_scenario(config_dir() / "scenarios" / f"{case.scenario}.yaml")
    pert = perturbation(seed, inputs, config) if perturbed else Perturbation()
    rows = settled_titration(scenario, seed=seed, target_ph=case.target_ph, max_volume_ml=case.max_volume_ml,
                             perturbation=pert)
    (titrant, label_m), = scenario.titrant.items()
    (analyte, c_a), = scenario.beaker.solution.items()
    v_a = scenario.beaker.volume_ml
    analysis = analyze_titration(rows.volume_ml, rows.ph, titrant_m=label_m, analyte_volume_ml=v_a,
                                 analyte=case.analyte, titrant=titrant, activity=True, config=config,
                                 uncertainty=inputs)
    truth_pka = default_library().get(case.analyte).pka
    out: dict = {"seed": seed, "rows": int(rows.ph.size), "unsettled": rows.unsettled,
                 "perturbation": asdict(pert), "values": []}

    def score(name: str, value: float, u: float, truth: float, supported: bool, method: str, **extra) -> None:
        out["values"].append({"parameter": name, "value": value, "u": u, "truth": truth, "supported": supported,
                              "method": method, "covered": bool(abs(value - truth) <= inputs.coverage_factor * u),
                              **extra})

    for k, truth in enumerate(truth_pka, start=1):
        best = analysis.best_pka(k)
        if best is not None:
            # What was stated before the budgets (for comparison): the uncorrected fit value with its Jacobian
            # standard error combined with the pH calibration offset only.
            before = {}
            if best.method == "curve_fit" and analysis.fit is not None and best.budget is not None:
                raw = best.value - best.budget.correction
                u_before = float(np.hypot(analysis.fit.uncertainties[f"pka{k}"], config.ph_calibration_sd))
                before = {"value_before": raw, "u_before": u_before,
                          "covered_before": bool(abs(raw - truth) <= inputs.coverage_factor * u_before)}
            score(f"pKa{k}", best.value, best.uncertainty, truth, True, best.method, **before)
        else:
            out["values"].append({"parameter": f"pKa{k}", "supported": False})
    for k in range(1, case.equivalents + 1):
        truth_v = k * c_a * v_a / rows.true_titrant_m
        eq = next((e for e in analysis.equivalence_points if e.index == k), None)
        if eq is not None and eq.supported and eq.budget is not None:
            score(f"V_eq{k}", eq.volume_ml, eq.budget.combined, truth_v, True, eq.method)
        else:
            out["values"].append({"parameter": f"V_eq{k}", "supported": False})
    conc = analysis.concentration
    if conc is not None and conc["supported"]:
        score("analyte_m", conc["analyte_m"], conc["uncertainty_m"], c_a, True, conc["method"])
    else:
        out["values"].append({"parameter": "analyte_m", "supported": False})
    return out


def summarise(runs: list[dict]) -> dict:
    by: dict[str, list[dict]] = {}
    for run in runs:
        for v in run["values"]:
            by.setdefault(v["parameter"], []).append(v)
    out = {}
    for name, values in by.items():
        stated = [v for v in values if v["supported"]]
        ratios = [abs(v["value"] - v["truth"]) / v["u"] for v in stated if v["u"] > 0]
        out[name] = {
            "n": len(stated), "not_stated": len(values) - len(stated),
            "coverage_pct": 100.0 * sum(v["covered"] for v in stated) / len(stated) if stated else None,
            "median_abs_error_over_u": float(np.median(ratios)) if ratios else None,
            "max_abs_error_over_u": float(np.max(ratios)) if ratios else None,
            "median_u": float(np.median([v["u"] for v in stated])) if stated else None,
            "mean_error": float(np.mean([v["value"] - v["truth"] for v in stated])) if stated else None,
            "methods": sorted({v["method"] for v in stated}),
        }
        before = [v for v in stated if "covered_before" in v]
        if before:  # the fit-only statement (Jacobian standard error and the 0.02 pH calibration) on the same runs
            out[name]["before_budget"] = {
                "n": len(before), "coverage_pct": 100.0 * sum(v["covered_before"] for v in before) / len(before),
                "median_abs_error_over_u": float(np.median([abs(v["value_before"] - v["truth"]) / v["u_before"]
                                                            for v in before]))}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--cases", nargs="*", default=[c.scenario for c in CASES])
    parser.add_argument("--unperturbed", action="store_true", help="also run the scenarios as written")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "coverage.json")
    args = parser.parse_args(argv)
    inputs, config = UncertaintyInputs.for_settled_readings(), AnalysisConfig()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    result: dict = {"commit": commit(), "load_1min_before": load_before,
                    "machine": f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}",
                    "seeds": args.seeds, "coverage_factor": inputs.coverage_factor,
                    "uncertainty_inputs": asdict(inputs), "ph_calibration_sd": config.ph_calibration_sd,
                    "truth": "pKa: library thermodynamic pKa (25 C) used by the twin with Davies activities; V_eq: "
                             "titrant truly delivered (true titrant concentration and drop volumes); "
                             "analyte_m: the scenario's", "settings": {}}
    settings = [("perturbed", True)] + ([("unperturbed", False)] if args.unperturbed else [])
    for label, perturbed in settings:
        per_case = {}
        for case in (c for c in CASES if c.scenario in args.cases):
            runs = [one_run(case, seed, perturbed, inputs, config) for seed in range(args.seeds)]
            per_case[case.scenario] = {"summary": summarise(runs), "runs": runs}
            for name, s in per_case[case.scenario]["summary"].items():
                cov = "-" if s["coverage_pct"] is None else f"{s['coverage_pct']:.0f} %"
                ratio = "-" if s["median_abs_error_over_u"] is None else f"{s['median_abs_error_over_u']:.2f}"
                was = s.get("before_budget")
                was = f"  (fit-only before: {was['coverage_pct']:.0f} %, {was['median_abs_error_over_u']:.2f})" if was else ""
                print(f"[coverage] {label:11s} {case.scenario:16s} {name:9s} n={s['n']:2d} "
                      f"(not stated {s['not_stated']}) coverage {cov:>5s}  median |err|/u {ratio}{was}", flush=True)
        result["settings"][label] = per_case
    result["wall_s"] = time.perf_counter() - started
    result["load_1min_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
