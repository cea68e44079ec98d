"""Grade one scenario run against what the scenario says should happen and what the twin knows happened.

Input is a :class:`RunRecord`: what a scenario runner saw (the RunExperiment result, the anomalies on
/anomaly, wall and sim time) plus what it read afterwards (the run's report.json results, record counts
from the store, the twin's ground truth). Nothing here reads ROS or the agents' internals, so the same
grading applies to any runner, live or replayed.

Truth comes from the scenario and the twin, never from the agents' own output: the theoretical
equivalence volume from the scenario's concentrations and volumes, pKa values from the reagent library
the twin's chemistry uses, drops and faults from the twin's event log.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from agentchemist.chemistry.equilibrium import equivalence_volumes_ml
from agentchemist.chemistry.reagents import UnknownReagentError, default_library
from agentchemist.experiments.results import results_of, unlabelled
from agentchemist.report.results import stated_pka
from agentchemist.sim.scenario import Scenario

__all__ = ["OUTCOME_OF_RESULT", "RunRecord", "score_run"]

# RunExperiment.outcome -> the scenario vocabulary of ExpectedSpec.outcome
OUTCOME_OF_RESULT = {"completed": "complete", "refused": "refuse", "question": "ask", "aborted": "abort"}
# An anomaly counts for a fault when raised after the fault fired, allowing for stamp jitter between nodes.
DETECTION_SLACK_S = 1.0
ALARM_SEVERITIES = ("warn", "halt")
_WORD = re.compile(r"[a-z][a-z0-9_-]{3,}")
_STOPWORDS = {"with", "that", "this", "from", "there", "than", "only", "into", "which", "would", "their", "needs",
              "need", "must", "does", "have", "been", "when", "what", "your", "the", "and"}


@dataclass
class RunRecord:
    """What one run produced (JSON-serialisable; written by the runner's worker)."""

    scenario: str
    file: str
    seed: int
    outcome: str                      # RunExperiment outcome, or "timeout" / "crashed"
    success: bool
    message: str
    experiment_id: str = ""
    report_path: str = ""
    wall_s: float = math.nan
    sim_s: float = math.nan           # the twin's clock at the end of the run (the report written too)
    task_s: float = math.nan          # the experiments' own duration: start to terminal state (twin clock)
    anomalies: list[dict[str, Any]] = field(default_factory=list)   # {stamp, source, kind, severity, response}
    results: dict[str, Any] = field(default_factory=dict)           # report.json sections.results
    records: dict[str, int] = field(default_factory=dict)           # fused rows per quantity, plus "raw", "events"
    truth: dict[str, Any] = field(default_factory=dict)             # the twin's truth_summary() + weighing
    memory_mb: list[float] = field(default_factory=list)            # RSS samples (MB) over the run
    memory_per_experiment_mb: list[float] = field(default_factory=list)  # RSS after each experiment (MB)
    experiments: int = 1                                            # back-to-back experiments in this run
    settled_ph_tail: list[float] = field(default_factory=list)      # settled pH after the last two drops

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunRecord":
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


def _finite(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else None


def _content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS}


def reason_matches(expected_reason: str | None, missing: list[str], message: str) -> bool:
    """The refusal or question says what the scenario expects: every missing item is named, and most
    content words of the expected reason appear (free text on both sides, so words, not sentences)."""
    text = message.lower().replace("_", " ")
    if any(item.lower().replace("_", " ") not in text for item in missing):
        return False
    if not expected_reason:
        return True
    words = _content_words(expected_reason.replace("_", " "))
    if not words:
        return True
    found = sum(1 for w in words if w in text)
    return found >= math.ceil(0.5 * len(words))


def _theory_equivalences(sc: Scenario) -> list[float]:
    """Equivalence volumes (mL) from the scenario: acid-base steps, or 1:1 complexation for EDTA."""
    if not sc.titrant or not sc.beaker.solution:
        return []
    lib = default_library()
    if any("edta" in name for name in sc.titrant):
        metal = [c for n, c in sc.beaker.solution.items() if n in ("calcium_chloride",)]
        edta = sum(sc.titrant.values())
        return [sum(metal) * sc.beaker.volume_ml / edta] if metal and edta > 0 else []
    try:
        return equivalence_volumes_ml(sc.beaker.solution, sc.beaker.volume_ml, sc.titrant, lib)
    except (ValueError, UnknownReagentError):
        return []


def _truth_pka(sc: Scenario) -> list[float]:
    lib = default_library()
    weak = []
    for name in sc.beaker.solution:
        try:
            reagent = lib.get(name)
        except UnknownReagentError:
            continue
        weak += [p for p in getattr(reagent, "pka", ()) if 0 < p < 14]
    return sorted(weak)


def _score_titration(sc: Scenario, rec: RunRecord, drop_ml: float, out: dict) -> None:
    res = rec.results
    theory = _theory_equivalences(sc)
    out["equivalence_theory_ml"] = theory
    # what the run found, as its family's result contract reads it (a run of no known family: as a titration curve)
    contract = results_of(res.get("family")) or unlabelled()
    found = contract.found_equivalences(res)
    errors = [f - t for f, t in zip(found, theory)]
    out["equivalence_found_ml"] = found
    out["equivalence_error_ml"] = errors
    out["equivalence_error_drops"] = [e / drop_ml for e in errors]
    # pKa: the analyte's weak steps, by index (1-based over the analyte's pKa values in [0, 14]). Scored is the
    # value the report states (the same choice as its answer); beside it, the half-equivalence pH (the paper's
    # method, when supported) and the fit's raw parameter (before the budget's known corrections, e.g. the
    # settling lag), so that a correction's share of the result stays visible.
    truth_pka = _truth_pka(sc)
    fit = res.get("curve_fit") or {}
    params = fit.get("parameters") or {} if fit.get("converged") else {}
    stated = stated_pka(res.get("pka"))
    pka_err, pka_half_err, pka_raw_err = [], [], []
    for i, true in enumerate(truth_pka, start=1):
        best = _finite((stated.get(i) or {}).get("value"))
        half = next((p["value"] for p in res.get("pka") or [] if p.get("index") == i and p.get("supported")
                     and p.get("method") == "half_equivalence" and _finite(p.get("value")) is not None), None)
        raw = _finite(params.get(f"pka{i}"))
        pka_err.append(None if best is None else best - true)
        pka_half_err.append(None if half is None else half - true)
        pka_raw_err.append(None if raw is None else raw - true)
    out["pka_truth"] = truth_pka
    out["pka_error"] = pka_err
    out["pka_half_equivalence_error"] = pka_half_err
    out["pka_fit_parameter_error"] = pka_raw_err
    analyte_m = contract.measured_concentration(res)
    true_m = next(iter(sc.beaker.solution.values()), None)
    if analyte_m is not None and true_m:
        out["concentration_error_rel"] = (analyte_m - true_m) / true_m


def score_run(sc: Scenario, rec: RunRecord) -> dict[str, Any]:
    """Per-run metrics. Keys with None mean "not applicable or not produced" (the summary says which)."""
    expected = sc.expected.outcome
    got = OUTCOME_OF_RESULT.get(rec.outcome, "failed")
    out: dict[str, Any] = {
        "scenario": rec.scenario, "seed": rec.seed, "expected": expected, "got": got, "outcome": rec.outcome,
        "message": rec.message, "wall_s": rec.wall_s, "sim_s": rec.sim_s,
        "task_s": _finite(rec.task_s),
    }
    out["outcome_ok"] = got == expected and (expected != "complete" or rec.success)
    if expected in ("refuse", "ask") and got == expected:
        out["reason_ok"] = reason_matches(sc.expected.reason, list(sc.expected.missing), rec.message)
        out["outcome_ok"] = out["outcome_ok"] and out["reason_ok"]
    out["completed"] = expected == "complete" and got == "complete" and rec.success
    drop_ml = sc.pipette.drop_volume_ml
    res = rec.results or {}
    target_ph = sc.expected.target_ph
    final_ph = _finite(res.get("final_ph"))
    out["final_ph"] = final_ph
    out["ph_deviation"] = abs(final_ph - target_ph) if final_ph is not None and target_ph is not None else None
    # With whole drops the target can only be met to one drop's pH step (near an equivalence that step
    # is large): the dispenser is right when the target lies between the last two settled readings.
    tail = [x for x in rec.settled_ph_tail if _finite(x) is not None]
    if target_ph is not None and len(tail) == 2 and got == "complete":
        lo, hi = sorted(tail)
        out["endpoint_within_one_drop"] = lo - 0.02 <= target_ph <= hi + 0.02
        out["last_drop_ph_step"] = abs(tail[1] - tail[0])
    true_ph = _finite(rec.truth.get("true_ph"))
    out["true_final_ph"] = true_ph
    if expected == "complete" and got == "complete" and sc.weighing is None and sc.titrant:
        _score_titration(sc, rec, drop_ml, out)
        total = _finite(res.get("total_volume_ml"))
        truth_ml = _finite(rec.truth.get("dispensed_ml"))
        if total is not None and truth_ml is not None and rec.experiments == 1:
            out["volume_error_ml"] = total - truth_ml
            out["volume_error_drops"] = (total - truth_ml) / drop_ml
    if sc.weighing is not None and got == "complete":
        mass = _finite(res.get("final_mass_g"))
        target = sc.expected.target_mass_g or _finite(res.get("target_mass_g"))
        poured = _finite((rec.truth.get("weighing") or {}).get("poured_g"))
        out["weighing_error_g"] = None if mass is None or target is None else mass - target
        out["weighing_truth_error_g"] = None if poured is None or target is None else poured - target
    _score_anomalies(sc, rec, out)
    out["records"] = dict(rec.records)
    landed = rec.truth.get("drops_landed")
    volume_rows = rec.records.get("titrant_volume")
    if isinstance(landed, int) and volume_rows is not None:
        out["records_match_truth"] = volume_rows == landed
    if rec.memory_mb:
        out["memory_mb_start"], out["memory_mb_peak"] = rec.memory_mb[0], max(rec.memory_mb)
    if len(rec.memory_per_experiment_mb) >= 2:
        # growth from the end of the first experiment (caches warm) to the end of the last
        out["memory_growth_mb"] = rec.memory_per_experiment_mb[-1] - rec.memory_per_experiment_mb[0]
        out["experiments_completed"] = len(rec.memory_per_experiment_mb)
    return out


def _score_anomalies(sc: Scenario, rec: RunRecord, out: dict) -> None:
    """Each injected fault is detected when an alarm of the expected kind is raised after it fired.
    On a clean run (no fault) every warn/halt anomaly is a false alarm; on a faulty run, alarms before
    the first fault are."""
    alarms = [a for a in rec.anomalies if a.get("severity") in ALARM_SEVERITIES]
    fired = rec.truth.get("faults") or []
    expected_kinds = list(sc.expected.anomalies)
    if not sc.faults and expected_kinds:  # the bench itself contradicts the plan from the start (a mislabelled bottle)
        fired = [{"kind": "bench_contents", "fired_at": 0.0}]
    detections = []
    for i, fault in enumerate(fired):
        want = expected_kinds[i] if i < len(expected_kinds) else None
        t0 = float(fault.get("fired_at", fault.get("at_s", 0.0))) - DETECTION_SLACK_S
        after = [a for a in alarms if float(a.get("stamp", 0.0)) >= t0]
        hit = next((a for a in after if a.get("kind") == want), None)
        detections.append({
            "fault": fault.get("kind"), "expected": want, "detected": hit is not None,
            "first_alarm": after[0].get("kind") if after else None,
            "latency_s": None if hit is None else float(hit["stamp"]) - (t0 + DETECTION_SLACK_S),
        })
    first_fault = min((float(f.get("fired_at", 0.0)) for f in fired), default=math.inf)
    false_alarms = [a for a in alarms if float(a.get("stamp", 0.0)) < first_fault - DETECTION_SLACK_S]
    out["faults_injected"] = len(sc.faults) or len(fired)
    out["faults_fired"] = len(fired)
    out["detections"] = detections
    out["false_alarms"] = [f"{a.get('source')}:{a.get('kind')}" for a in false_alarms]
    out["alarm_kinds"] = sorted({a.get("kind", "") for a in alarms})
