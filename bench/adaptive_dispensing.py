"""Adaptive dispensing vs the best constant rate at equal accuracy (issue 20 item 4), side by side in one run.

Three chemistries (their twin setups from config/scenarios/): strong/strong (hcl_naoh), weak acid
(acetic_naoh), diprotic (maleic_naoh, its second equivalence), each titrated to its equivalence pH (the
twin chemistry's pH at the last equivalence volume, 25.00 mL for all three: the point on the jump where
one drop moves the pH by 0.8-2.9 units, so a late stop shows as a whole drop too many). The same seeds for
every strategy. The loop is src/agentchemist/sim/closed_loop.py (the graph's rates, the real drop detector,
the one endpoint judge that holds and cancels the goal); graded against the twin's truth.

Accuracy. On the jump the true crossing lies inside one drop, and that drop lands whole: the overshoot
from the true crossing volume (`overshoot_from_crossing_drops`, the figure the issue quoted) is between 0
and 1 drop for a perfect stop, wherever the crossing falls inside the drop (the drops' own volumes, which
grow with the squeeze rate, decide that), so its worst case over 15 runs is about the quantisation, not
the controller. What a controller adds is what lands after the crossing drop: `excess_drops` (that
volume in nominal drops; 0 when the crossing drop was the last). The equal-accuracy criterion is written
in the result: a strategy qualifies when its worst excess over every seed and chemistry is <= 0.5 drop
(no drop after the crossing one); adaptive must qualify and have a worst excess <= the constant's.

Constant rate = the same controller with fine mode and prediction off (it still holds while the pH moves
fast), swept from fast to slow; the first (fastest) rate that qualifies on every run is the best constant
rate (a rate stops at its first failing run: the rows say which). Adaptive = the controller's defaults at
its default far rate and at far rates up to the audio detector's limit (every drop heard up to 0.35 mm/s
on water); the fastest that qualifies and counted every drop it squeezed is the one compared. The defaults predict (agentchemist.control.approach): the squeeze
passed through the reading's lags gives the curve while squeezing, the log law bounds the volume left to
the next equivalence jump, and the controller holds only where that or the target comes within a few
drops; increments near a jump are a share of that bound and end on the squeeze; a hold ends once the
reading has caught up and what is squeezed cannot reach the jump or the target.
The seeds are 1-5 (the controller was tuned on these); the compared pair also runs on held-out seeds 11-15
(`held_out`, never looked at while tuning; seeds 6-10 were the first held-out set, and a failure there, the
crossing drop's reading settling 0.01-0.02 pH under the target, led to `edge_settle_s`). Each row has where its time went (`phases_s`) and the drops heard against
those that landed (every drop counted).
Speed = sim time from the goal's start to the endpoint (the judge's cancel, after its 5 s hold). Rates are
nominal: the controller rounds each command to the gripper's 0.001 mm every 0.05 s, so it really closes at
a multiple of about 0.02 mm/s (0.075 and 0.0875 both at 0.08; 0.0625 at 0.06; 0.25 at 0.256).

Run:  .venv/bin/python bench/adaptive_dispensing.py [--quick] [--out bench/results/adaptive_dispensing.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.dispenser import CONSTANT, DROP, config, scenario  # noqa: E402
from bench.provenance import commit  # noqa: E402
from agentchemist.control.dispenser import DispenseGoal  # noqa: E402
from agentchemist.sim.beaker import Beaker  # noqa: E402
from agentchemist.sim.closed_loop import ClosedLoop, crossing_volume, grade_titration  # noqa: E402

CHEMISTRIES = {"strong/strong": "hcl_naoh", "weak acid": "acetic_naoh", "diprotic": "maleic_naoh"}
EQUIVALENCE_ML = 25.0   #: all three: 25 mL of 0.1 M monoprotic or 0.05 M diprotic acid, 0.1 M NaOH
CONSTANT_RATES = (0.25, 0.2, 0.15, 0.125, 0.1, 0.0875, 0.075, 0.0625, 0.05, 0.04, 0.03, 0.025)
CRITERION = ("a strategy qualifies when its worst excess_drops (titrant landed after the drop that crossed the "
             "target, in nominal drops) over every seed and chemistry is <= 0.5 drop; adaptive must qualify and "
             "its worst excess must be <= the best constant rate's worst excess")


def equivalence_ph(name: str) -> float:
    """The twin chemistry's pH (as its activity-reading probe shows it) at the last equivalence volume."""
    sc = scenario(name, 1)
    beaker = Beaker(sc.beaker, sc.probe.temperature_c, activity=sc.probe.activity)
    beaker.add_liquid(EQUIVALENCE_ML, dict(sc.titrant))
    return round(beaker.ph(), 2)


#: where a run's sim time goes (`phases`): MOTION split by the closing rate it ran, WAIT by what started it
PHASES = ("top_rate", "slower_rate", "wait_change_rate", "wait_near_target", "wait_endpoint_released",
          "endpoint_confirm", "other")
WAITS = {"change_rate_high": "wait_change_rate", "near_target_drop": "wait_near_target",
         "drop_landed_settle": "wait_near_target"}


def phases(run, top_rate_mm_s: float) -> dict:
    """The run's sim time by phase, from its control steps (every 0.05 s: the state it was in and the command
    it sent). MOTION closing at >= 0.8 x the goal's rate is `top_rate` (the squeeze before the first drop,
    priming, is inside it and also given alone), any slower closing (the fine rate, a single drop) is
    `slower_rate`; a WAIT counts under what started it: a change-rate hold, a hold near the target (one drop
    or a planned increment, then settle), the judge's hold that it released again (the level fell back short
    of the target), and the last hold, the judge confirming the endpoint until it cancels the goal. Also the
    number of holds of each kind."""
    out = dict.fromkeys(PHASES, 0.0)
    counts = dict.fromkeys(PHASES, 0)
    marks = sorted(run.transitions, key=lambda x: x[0])
    first_drop = run.drops_passed[0] if run.drops_passed else math.inf
    priming = 0.0
    state, why, k = "MOTION", "", 0
    cmds = run.commands
    last_hold = max((t for t, _s, cond, _d in marks if cond == "hold_command"), default=None)
    judged = run.judge is not None and run.judge.reached_at is not None

    def wait_key(why: str, last: bool) -> str:
        """What a WAIT started by `why` counts under; `last`: the run's last hold_command (the judge's)."""
        if why == "hold_command":
            return "endpoint_confirm" if last and judged else "wait_endpoint_released"
        return WAITS.get(why, "other")

    for (t0, c0), (t1, c1) in zip(cmds, cmds[1:]):
        while k < len(marks) and marks[k][0] <= t0 + 1e-9:
            _t, _src, cond, dst = marks[k]
            state, why = dst.value, cond
            if dst.value == "WAIT":
                counts[wait_key(cond, _t == last_hold)] += 1
            k += 1
        dt = t1 - t0
        if state == "MOTION":
            rate = (c0 - c1) / dt if dt > 0 else 0.0
            key = "top_rate" if rate >= 0.8 * top_rate_mm_s else "slower_rate"
            if t1 <= first_drop:
                priming += dt
        elif state == "WAIT":
            key = wait_key(why, t0 >= (last_hold or math.inf))
        else:
            key = "other"
        out[key] += dt
    result = {k: round(v, 2) for k, v in out.items()}
    result["priming_s"] = round(priming, 2)
    result["holds"] = {k: v for k, v in counts.items() if v}
    return result


def titrate(name: str, target: float, seed: int, goal_kw: dict, cfg_kw: dict, max_s: float = 3000.0) -> dict:
    loop = ClosedLoop(scenario(name, seed))
    loop.prepare(draw_ml=55.0)
    run = loop.run(DispenseGoal(target_ph=target, **goal_kw), config(**cfg_kw), max_s=max_s)
    o = grade_titration(loop, run, target)
    drops = [d for d in loop.twin.truth()["drops"] if d["fate"] in ("beaker", "overflow")]
    landed, times = [d["volume_ml"] for d in drops], [d["time"] for d in drops]
    crossed = crossing_volume(loop.scenario, landed, target)
    excess = sum(landed[crossed[1] + 1:]) / DROP if crossed else float("nan")
    after_crossing = run.ended - times[crossed[1]] if crossed else float("nan")
    reached = run.judge is not None and run.judge.reached_at is not None
    holds = sum(1 for _, _, cond, _ in run.transitions if cond in ("near_target_drop", "drop_landed_settle"))
    return {"seed": seed, "endpoint": reached, "sim_s": round(o.sim_s, 2), "excess_drops": round(excess, 3),
            "drops_after_crossing": o.drops_after_crossing,
            "overshoot_from_crossing_drops": round(o.overshoot_drops, 3), "true_ph": round(o.true_ph, 3),
            "holds": holds, "drops_heard": len(run.drops_passed), "drops_landed": len(landed),
            "anomalies": sorted({a.kind for a in run.anomalies}),
            "phases_s": {**phases(run, run.controller.rate), "crossing_drop_to_endpoint": round(after_crossing, 2)}, "reading_lag_s": round(run.controller.reading_lag_s, 2)}


def mean_phases(rows: list[dict]) -> dict:
    """The mean of each phase (s) and of each kind of hold (count) over rows."""
    out = {k: round(statistics.fmean(r["phases_s"][k] for r in rows), 1)
           for k in (*PHASES, "priming_s", "crossing_drop_to_endpoint")}
    kinds = sorted({k for r in rows for k in r["phases_s"]["holds"]})
    out["holds_mean"] = {k: round(statistics.fmean(r["phases_s"]["holds"].get(k, 0) for r in rows), 1) for k in kinds}
    return out


def strategy(label: str, goal_kw: dict, cfg_kw: dict, targets: dict, seeds: list[int], stop_on_fail: bool) -> dict:
    rows, failed = {}, None
    for kind, name in CHEMISTRIES.items():
        rows[kind] = []
        for seed in seeds:
            r = titrate(name, targets[kind], seed, goal_kw, cfg_kw)
            rows[kind].append(r)
            ok = r["endpoint"] and r["excess_drops"] <= 0.5
            print(f"{label:28s} {kind:13s} seed {seed}: {r['sim_s']:7.1f} s, excess {r['excess_drops']:.2f} drop, "
                  f"from crossing {r['overshoot_from_crossing_drops']:.2f}{'' if ok else '  FAILS'}", flush=True)
            if not ok and failed is None:
                failed = f"{kind} seed {seed}: excess {r['excess_drops']:.2f} drop, endpoint {r['endpoint']}"
                if stop_on_fail:
                    return {"goal": goal_kw, "config": cfg_kw, "qualifies": False, "failed": failed, "rows": rows}
    every = [r for rs in rows.values() for r in rs]
    out = {"goal": goal_kw, "config": cfg_kw, "qualifies": failed is None, "failed": failed,
           # every drop counted: the drops the controller was given (heard) against those that landed (truth)
           "runs_heard_ne_landed": sum(r["drops_heard"] != r["drops_landed"] for r in every),
           "drops_landed_unheard": sum(max(0, r["drops_landed"] - r["drops_heard"]) for r in every),
           "worst_excess_drops": max(r["excess_drops"] for r in every),
           "worst_overshoot_from_crossing_drops": max(r["overshoot_from_crossing_drops"] for r in every),
           "sim_s_mean": round(statistics.fmean(r["sim_s"] for r in every), 2),
           "by_chemistry": {k: {"sim_s_mean": round(statistics.fmean(r["sim_s"] for r in rs), 2),
                                "worst_excess_drops": max(r["excess_drops"] for r in rs),
                                "phases_mean_s": mean_phases(rs)} for k, rs in rows.items()},
           "rows": rows}
    return out


#: the adaptive strategies compared (the controller's defaults, and its far rate up to the audio detector's
#: limit: every drop heard up to 0.35 mm/s on water, bench/results/dispenser.json); the fastest that qualifies
#: and counted every drop (drops heard == landed in every row) is compared (and, for reference, the
#: controller before the prediction at 0.25 mm/s: where its time went)
ADAPTIVE = {"adaptive (defaults)": ({}, {}), "adaptive 0.25 mm/s": ({"rate_mm_s": 0.25}, {}),
            "adaptive 0.3 mm/s": ({"rate_mm_s": 0.3}, {}), "adaptive 0.35 mm/s": ({"rate_mm_s": 0.35}, {}),
            "adaptive 0.25 mm/s, no prediction": ({"rate_mm_s": 0.25}, {"predictive": False})}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2 seeds (a smoke run; the figure needs 5)")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "adaptive_dispensing.json")
    ap.add_argument("--held-out", default="11,12,13,14,15",
                    help="seeds the controller was never tuned on: the compared pair runs on them too ('' = none)")
    args = ap.parse_args()
    seeds = [1, 2] if args.quick else [1, 2, 3, 4, 5]
    held_out = [int(x) for x in args.held_out.split(",") if x.strip()]
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    targets = {kind: equivalence_ph(name) for kind, name in CHEMISTRIES.items()}
    adaptive = {label: strategy(label, g, c, targets, seeds, False) for label, (g, c) in ADAPTIVE.items()}
    constant, best = {}, None
    for rate in CONSTANT_RATES:   # fastest first: the first that qualifies is the best
        label = f"constant {rate} mm/s"
        constant[label] = strategy(label, {"rate_mm_s": rate}, CONSTANT, targets, seeds, True)
        if constant[label]["qualifies"]:
            best = label
            break
    for r in adaptive.values():
        r["counting_ok"] = r["runs_heard_ne_landed"] == 0
    qualified = [k for k, r in adaptive.items() if r["qualifies"] and r["counting_ok"]]
    chosen = min(qualified, key=lambda k: adaptive[k]["sim_s_mean"]) if qualified else None
    verdict = {"criterion": CRITERION, "counting": "an adaptive strategy is compared only if drops heard == drops "
               "landed in every row", "adaptive": chosen, "best_constant": best}
    if best is not None and chosen is not None:
        a = adaptive[chosen]
        b = constant[best]
        verdict.update({
            "adaptive_sim_s_mean": a["sim_s_mean"], "best_constant_sim_s_mean": b["sim_s_mean"],
            "speedup": round(b["sim_s_mean"] / a["sim_s_mean"], 2),
            "speedup_by_chemistry": {k: round(b["by_chemistry"][k]["sim_s_mean"]
                                              / a["by_chemistry"][k]["sim_s_mean"], 2) for k in CHEMISTRIES},
            "adaptive_worst_excess_drops": a["worst_excess_drops"],
            "constant_worst_excess_drops": b["worst_excess_drops"],
            "adaptive_worst_overshoot_from_crossing_drops": a["worst_overshoot_from_crossing_drops"],
            "constant_worst_overshoot_from_crossing_drops": b["worst_overshoot_from_crossing_drops"],
            "equal_accuracy_met": bool(a["qualifies"] and a["worst_excess_drops"] <= b["worst_excess_drops"]),
            "speedup_of_each_adaptive": {k: round(b["sim_s_mean"] / r["sim_s_mean"], 2) for k, r in adaptive.items()
                                         if r["qualifies"]}})
    held = {}
    if held_out and best is not None and chosen is not None:
        # The same pair on seeds never tuned on (every run, no stop at a failure): the figure must hold there too.
        a_kw, b_kw = ADAPTIVE[chosen], (constant[best]["goal"], CONSTANT)
        held = {chosen: strategy(chosen, *a_kw, targets, held_out, False),
                best: strategy(best, *b_kw, targets, held_out, False)}
        ha, hb = held[chosen], held[best]
        verdict["held_out"] = {
            "seeds": held_out, "adaptive_sim_s_mean": ha["sim_s_mean"], "best_constant_sim_s_mean": hb["sim_s_mean"],
            "speedup": round(hb["sim_s_mean"] / ha["sim_s_mean"], 2),
            "speedup_by_chemistry": {k: round(hb["by_chemistry"][k]["sim_s_mean"] / ha["by_chemistry"][k]["sim_s_mean"], 2)
                                     for k in CHEMISTRIES},
            "adaptive_worst_excess_drops": ha["worst_excess_drops"], "constant_worst_excess_drops": hb["worst_excess_drops"],
            "adaptive_qualifies": ha["qualifies"], "constant_qualifies": hb["qualifies"],
            "adaptive_failed": ha["failed"], "constant_failed": hb["failed"]}
    result = {"targets_ph": targets, "seeds": seeds, "verdict": verdict, "adaptive": adaptive, "constant": constant,
              "held_out": held,
              "commit": commit(), "machine": f"{platform.machine()} {os.cpu_count()} cores, Python "
              f"{platform.python_version()}", "load_avg_1min": {"start": load0, "end": os.getloadavg()[0]},
              "wall_s": round(time.perf_counter() - t0, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(json.dumps(verdict, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
