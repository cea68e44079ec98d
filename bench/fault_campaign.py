"""Benchmark: the fault campaign (agentchemist_ros.tools.fault_campaign) over every fault and >= 3 seeds.

Each agent in turn runs in its own OS process and is killed (SIGKILL) or stalled (SIGSTOP, SIGCONT once the
loss has been handled) after a seeded number of drops of an HCl/NaOH titration in the twin. Per case: held
(no drop but the forming one after the anomaly), named (an anomaly names the victim), records lost (fused
records the recorder acknowledged but the store lacks), honest (no success with something lost; the report
of an interrupted run says so). Writes bench/results/fault_campaign.json (cases, per-fault summary, commit,
machine load) and bench/results/fault_campaign.md (the table).

Run:  . scripts/env.sh && python bench/fault_campaign.py [--seeds 3] [--faults kill:recorder,...]
About half a minute per case (10 faults x 3 seeds: about 15-20 minutes on 2 cores).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(150, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: bench.provenance
from bench.provenance import commit  # noqa: E402
from agentchemist_ros.tools.fault_campaign import FAULTS, run_case  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


def summarise(cases: list[dict]) -> list[dict]:
    rows = []
    for fault in dict.fromkeys(c["fault"] for c in cases):
        of = [c for c in cases if c["fault"] == fault]
        rows.append({"fault": fault, "cases": len(of), "held": sum(c["held"] for c in of),
                     "named": sum(c["named"] for c in of),
                     "records_lost": sum(max(0, c["records_acked"] - c["records_stored"]) for c in of),
                     "honest": sum(c["honest"] for c in of),
                     "detection_s_max": max((c["detection_s"] for c in of if c["named"]), default=None),
                     "drops_after_hold_max": max(c["drops_after_hold"] for c in of),
                     "outcomes": sorted({c["outcome"] or "?" for c in of})})
    return rows


def markdown(summary: list[dict], meta: dict) -> str:
    lines = [f"# Fault campaign ({meta['commit']}, {meta['machine']}, load {meta['load_before'][0]:.1f} -> "
             f"{meta['load_after'][0]:.1f})", "",
             "Victim in its own process, killed or stalled after a seeded 5-14 drops of an HCl/NaOH titration "
             "(tests/data/scenarios/hcl_short.yaml); `python bench/fault_campaign.py`.", "",
             "| fault | cases | held | anomaly names it | records lost | report honest | detection (sim s, max) "
             "| drops after hold (max) | outcomes |", "|---|---|---|---|---|---|---|---|---|"]
    for r in summary:
        det = "-" if r["detection_s_max"] is None else f"{r['detection_s_max']:.1f}"
        lines.append(f"| {r['fault']} | {r['cases']} | {r['held']}/{r['cases']} | {r['named']}/{r['cases']} | "
                     f"{r['records_lost']} | {r['honest']}/{r['cases']} | {det} | {r['drops_after_hold_max']} | "
                     f"{', '.join(r['outcomes'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--faults", default=",".join(FAULTS))
    p.add_argument("--out", type=Path, default=RESULTS / "fault_campaign.json")
    p.add_argument("--update", action="store_true", help="replace only these faults' cases in --out (each case "
                   "keeps the commit it ran on)")
    args = p.parse_args(argv)
    load_before = os.getloadavg()
    faults = args.faults.split(",")
    kept = []
    if args.update and args.out.exists():
        kept = [c for c in json.loads(args.out.read_text())["cases"] if c["fault"] not in faults]
    cases = []
    with tempfile.TemporaryDirectory(prefix="bench_faults_") as work:
        for fault in faults:
            for seed in range(1, args.seeds + 1):
                case = run_case(fault, seed, SCENARIO, Path(work))
                cases.append(asdict(case) | {"ok": case.ok, "commit": commit(), "load_1min": os.getloadavg()[0]})
                print(f"[fault_campaign] {fault} seed {seed}: ok={case.ok} {case.outcome} {case.problems}", flush=True)
    order = {f: i for i, f in enumerate(FAULTS)}
    cases = sorted(kept + cases, key=lambda c: (order.get(c["fault"], 99), c["seed"]))
    meta = {"commit": ", ".join(dict.fromkeys(c.get("commit", "?") for c in cases)), "machine": f"{platform.machine()} {os.cpu_count()} cores, "
            f"Python {platform.python_version()}", "load_before": load_before, "load_after": os.getloadavg()}
    summary = summarise(cases)
    args.out.write_text(json.dumps({**meta, "summary": summary, "cases": cases}, indent=1))
    args.out.with_suffix(".md").write_text(markdown(summary, meta))
    print(markdown(summary, meta))
    return 0 if all(c["ok"] for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
