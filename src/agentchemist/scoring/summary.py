"""Totals over scored runs, per scenario and overall, set beside the paper's Table 4.

Definitions (the paper does not define its own precisely, so these are stated in every output):

- completion: runs that reached ``completed`` / runs whose scenario expects ``complete``;
- expected behaviour: runs whose outcome (and, for refusals and questions, whose reason) is the scenario's;
- pH deviation: mean |final recorded pH - target pH| over completed titrations to a target pH; with whole
  drops the target is met only to one drop's pH step, so "endpoint within one drop" also says how often
  the target lay between the last two settled readings (the dispenser stopped on the first drop past it);
- pH deviation on a plateau / on the jump: the same, split by the pH step of the last drop. Where one drop
  moves the settled pH by more than PH_DEVIATION_GOAL (the paper's best mean deviation, 0.11), the target
  lies on an equivalence jump and can only be met to within that step (the short fault scenarios titrate
  5 mL of HCl to pH 10, where one drop moves the pH by about 6 units); those runs are reported with the
  drop's pH step beside the deviation and the share that stopped on the first drop past the target. The
  runs whose last drop moved the pH by less are targets on a plateau, where the deviation measures the
  dispensing itself;
- anomaly detection accuracy: (faults detected with the right kind + clean runs without a false alarm)
  / (faults injected + clean runs); a clean run is one expected to complete with no fault injected;
- time per task: mean task time (the experiment's own duration on the twin's clock, from its start to
  its terminal state: the robot's time) and wall time of runs expected to complete; sim time also counts
  the report written after the end. The paper's times are on the real robot.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from typing import Any, Iterable

__all__ = ["PAPER_TABLE4", "PH_DEVIATION_GOAL", "summarise"]

# pH units: the paper's best mean |final pH - target| (Table 4), the figure ours is set beside.
PH_DEVIATION_GOAL = 0.11

PAPER_TABLE4 = {
    "Qwen3 (paper's best)": {"completion": 0.96, "ph_deviation": 0.11, "anomaly_accuracy": 0.94, "time_s": 238},
    "Qwen2": {"completion": 0.92, "ph_deviation": 0.15, "anomaly_accuracy": 0.89, "time_s": 251},
    "non-LLM": {"completion": 0.78, "ph_deviation": 0.26, "anomaly_accuracy": 0.73, "time_s": 298},
}


def _vals(rows: Iterable[dict], key: str) -> list[float]:
    out = []
    for r in rows:
        v = r.get(key)
        for x in (v if isinstance(v, list) else [v]):
            if isinstance(x, (int, float)) and math.isfinite(x):
                out.append(float(x))
    return out


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    abs_vals = [abs(v) for v in values]
    return {"n": len(values), "mean": statistics.fmean(values), "mean_abs": statistics.fmean(abs_vals),
            "max_abs": max(abs_vals), "sd": statistics.stdev(values) if len(values) > 1 else 0.0}


def _rate(flags: list) -> float | None:
    known = [bool(f) for f in flags if f is not None]
    return sum(known) / len(known) if known else None


def _endpoint_block(rows: list[dict], *, on_jump: bool) -> dict[str, Any] | None:
    """Completed titrations to a target pH whose last drop moved the pH by more (on_jump) or less than the goal."""
    picked = [r for r in rows if r.get("completed") and isinstance(r.get("ph_deviation"), (int, float))
              and isinstance(r.get("last_drop_ph_step"), (int, float))
              and (r["last_drop_ph_step"] > PH_DEVIATION_GOAL) == on_jump]
    if not picked:
        return None
    return {"runs": len(picked), "ph_deviation": _stats(_vals(picked, "ph_deviation")),
            "last_drop_ph_step": _stats(_vals(picked, "last_drop_ph_step")),
            "endpoint_within_one_drop": _rate([r.get("endpoint_within_one_drop") for r in picked])}


def _block(rows: list[dict]) -> dict[str, Any]:
    expect_complete = [r for r in rows if r["expected"] == "complete"]
    clean = [r for r in expect_complete if not r.get("faults_injected")]
    faults = [d for r in rows for d in r.get("detections", [])]
    missed_faults = sum(max(0, r.get("faults_injected", 0) - r.get("faults_fired", 0)) for r in rows)
    detected = sum(1 for d in faults if d["detected"])
    clean_ok = sum(1 for r in clean if not r.get("false_alarms"))
    denominator = len(faults) + missed_faults + len(clean)
    block: dict[str, Any] = {
        "runs": len(rows),
        "expected_behaviour": sum(1 for r in rows if r.get("outcome_ok")) / len(rows) if rows else None,
        "expected_complete": len(expect_complete),
        "completion": (sum(1 for r in expect_complete if r.get("completed")) / len(expect_complete)
                       if expect_complete else None),
        "refusals_and_questions_ok": [r.get("outcome_ok") for r in rows if r["expected"] in ("refuse", "ask")],
        "faults_injected": len(faults) + missed_faults,
        "faults_detected": detected,
        "clean_runs": len(clean),
        "clean_runs_with_false_alarm": len(clean) - clean_ok,
        "false_alarms": sorted({a for r in clean for a in r.get("false_alarms", [])}),
        "anomaly_accuracy": (detected + clean_ok) / denominator if denominator else None,
        "ph_deviation": _stats(_vals([r for r in rows if r.get("completed")], "ph_deviation")),
        "endpoint_on_plateau": _endpoint_block(rows, on_jump=False),
        "endpoint_on_jump": _endpoint_block(rows, on_jump=True),
        "endpoint_within_one_drop": _rate([r.get("endpoint_within_one_drop") for r in rows]),
        "equivalence_error_ml": _stats(_vals(rows, "equivalence_error_ml")),
        "equivalence_error_drops": _stats(_vals(rows, "equivalence_error_drops")),
        "volume_error_drops": _stats(_vals(rows, "volume_error_drops")),
        "pka_error": _stats(_vals(rows, "pka_error")),
        "pka_half_equivalence_error": _stats(_vals(rows, "pka_half_equivalence_error")),
        "pka_fit_parameter_error": _stats(_vals(rows, "pka_fit_parameter_error")),
        "concentration_error_rel": _stats(_vals(rows, "concentration_error_rel")),
        "weighing_error_g": _stats(_vals(rows, "weighing_error_g")),
        "wall_s": _stats(_vals(expect_complete, "wall_s")),
        "sim_s": _stats(_vals(expect_complete, "sim_s")),
        "task_s": _stats(_vals(expect_complete, "task_s")),
        "records": sum(sum(r.get("records", {}).values()) for r in rows),
        "records_match_truth": [r["records_match_truth"] for r in rows if "records_match_truth" in r],
    }
    block["refusals_and_questions_ok"] = (all(block["refusals_and_questions_ok"])
                                          if block["refusals_and_questions_ok"] else None)
    return block


def summarise(scored: list[dict]) -> dict[str, Any]:
    """Per scenario and total blocks; see the module docstring for the definitions."""
    by_scenario: dict[str, list[dict]] = defaultdict(list)
    for row in scored:
        by_scenario[row["scenario"]].append(row)
    total = _block(scored)
    return {
        "definitions": __doc__.split("Definitions", 1)[1].strip(),
        "scenarios": {name: _block(rows) for name, rows in sorted(by_scenario.items())},
        "total": total,
        "paper_table4": PAPER_TABLE4,
        "ours": {"completion": total["completion"],
                 "ph_deviation": (total["ph_deviation"] or {}).get("mean_abs"),
                 "ph_deviation_goal": PH_DEVIATION_GOAL,
                 "endpoint_on_plateau": total["endpoint_on_plateau"],
                 "endpoint_on_jump": total["endpoint_on_jump"],
                 "anomaly_accuracy": total["anomaly_accuracy"],
                 "sim_time_s": (total["sim_s"] or {}).get("mean"),
                 "task_time_s": (total["task_s"] or {}).get("mean"),
                 "wall_time_s": (total["wall_s"] or {}).get("mean")},
    }
