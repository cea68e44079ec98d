"""A fault campaign: kill or stall one agent at a random moment of a titration in the twin, and grade what
the rest of the graph did about it.

    python -m agentchemist_ros.tools.fault_campaign [--faults kill:recorder,stall:audio_supervisor,...]
                                                    [--seeds 3] [--json OUT]

The victim runs in its own OS process (as every node does on the robot), on the twin's clock; the rest of
the graph runs in this process (agentchemist_ros.tools.graph). After a seeded number of drops (5-14) the
victim gets SIGKILL (kill: it stays dead) or SIGSTOP (stall: SIGCONT once the loss has been handled and
the twin has gone on for `hold_check_s` of sim time). The database victim is a throwaway PostgreSQL server
(agentchemist.record.pg_local) that the recorder, in its own process, writes to: kill crashes it
(pg_ctl stop -m immediate), stall stops its processes (SIGSTOP: connections stay open, writes hang).
Each case is graded on four questions:

* held: from the anomaly on, at most the drop already forming falls while the victim is gone (the twin's
  own drop count, not the graph's) - or, for a database fault, the record goes on (the recorder spills to
  its run folder and keeps acknowledging), so nothing falls unrecorded;
* named: an anomaly names the victim (node_lost with its name; recorder_lost for the recorder; the
  recorder's store failure for the database);
* records: every fused record the recorder acknowledged (RecorderStatus.records) is in the store;
* honest: the run is not reported a success when something was lost (a kill, a gap in the record), and
  the report of an interrupted run says so and states no endpoint finding.
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import rclpy
from rclpy.action import ActionClient
from rclpy.node import Node

from agentchemist.record import open_store
from agentchemist.record.pg_local import PostgresServer, find_bindir
from agentchemist.record.recording import SPILL_NAME
from agentchemist.sim.scenario import load_scenario
from agentchemist_interfaces.action import RunExperiment
from agentchemist_interfaces.msg import Anomaly, Heartbeat, RecorderStatus
from agentchemist_ros.common import topics
from agentchemist_ros.common.qos import LATCHED, RELIABLE
from agentchemist_ros.common.timeconv import to_sec
from agentchemist_ros.tools.graph import Graph, ensure_init
from agentchemist_ros.tools.scenario_runner import _seeded_scenario

VICTIMS = ("dispenser_controller", "audio_supervisor", "action_policy", "recorder", "vision_supervisor", "database")
FAULTS = tuple(f"{how}:{victim}" for how in ("kill", "stall") for victim in VICTIMS)
#: what the recorder says when its database fails (agentchemist.record.store) - or, when a stopped server
#: blocks its writes, the supervisor's recorder_lost
STORE_FAULTS = ("connection_lost", "write_failed", "io_error", "database_locked", "recorder_lost")
#: the nodes that take a runs_dir (their own process must write where the graph does)
WITH_RUNS_DIR = ("recorder", "vision_supervisor", "summarizer")


@dataclass
class CaseResult:
    fault: str
    seed: int
    trigger_drops: int
    held: bool = False
    named: bool = False
    records_kept: bool = False
    honest: bool = False
    detection_s: float = float("nan")   #: sim s from the fault to the anomaly that names the victim
    drops_after_hold: int = -1          #: drops the twin landed after that anomaly while the victim was gone
    records_acked: int = 0
    records_stored: int = 0
    outcome: str = ""
    message: str = ""
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.held and self.named and self.records_kept and self.honest


class Probe(Node):
    def __init__(self):
        super().__init__("fault_campaign_probe")
        self.anomalies, self.statuses, self.beats = [], [], set()
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(RecorderStatus, topics.RECORDER_STATUS, self.statuses.append, LATCHED)
        self.create_subscription(Heartbeat, topics.HEARTBEATS, lambda m: self.beats.add(m.node), RELIABLE)

    def naming(self, victim: str, since: float) -> list:
        """The anomalies raised at or after `since` (the fault) that name the victim."""
        fresh = [a for a in self.anomalies if not a.resolved and to_sec(a.stamp) >= since]
        if victim == "database":
            return [a for a in fresh if a.kind in STORE_FAULTS]
        if victim == "recorder":
            return [a for a in fresh if a.kind == "recorder_lost"]
        return [a for a in fresh if a.kind == "node_lost" and victim in a.description]


def wait_for(condition, timeout_s: float, period_s: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(period_s)
    return bool(condition())


def start_victim(victim: str, runs: Path, store_url: str = "") -> subprocess.Popen:
    args = ["-p", "use_sim_time:=true"]
    if victim in WITH_RUNS_DIR:
        args += ["-p", f"runs_dir:={runs}"]
    if store_url:
        args += ["-p", f"store_url:={store_url}"]
    runs.mkdir(parents=True, exist_ok=True)
    with open(runs / f"{victim}.log", "ab") as log:  # its own log beside the runs: what it saw, for a failed case
        return subprocess.Popen([sys.executable, "-m", f"agentchemist_ros.{victim}_node", "--ros-args", *args],
                                stdout=log, stderr=subprocess.STDOUT)


def run_case(fault: str, seed: int, scenario: Path, work: Path, hold_check_s: float = 10.0) -> CaseResult:
    """One fault on one seed: the victim in its own process (or the database), the graph here, graded."""
    how, victim = fault.split(":")
    case = CaseResult(fault, seed, trigger_drops=random.Random(f"{fault}/{seed}").randint(5, 14))
    started = time.monotonic()
    runs = work / f"{how}_{victim}_{seed}"
    runs.mkdir(parents=True, exist_ok=True)
    server = PostgresServer(find_bindir()) if victim == "database" else None
    try:
        store_url = None
        if server is not None:
            server.start()
            store_url = server.url()  # a fresh server per case: its default database is empty
        outcome, probe = drive(case, how, victim, runs, scenario, hold_check_s, server, store_url)
        case.wall_s = round(time.monotonic() - started, 1)
        if server is not None and not server.running():
            server.start()  # crash recovery: what was committed is back; the spill replays into it
        if outcome is not None:
            grade_record_and_report(case, probe, outcome, runs, lost=(how == "kill" and server is None),
                                    store_url=store_url)
    finally:
        if server is not None:
            server.signal(signal.SIGCONT)
            server.cleanup()
    return case


def drive(case: CaseResult, how: str, victim: str, runs: Path, scenario: Path, hold_check_s: float,
          server: PostgresServer | None, store_url: str | None):
    """Run the titration, apply the fault at the trigger, watch what the graph does; (result, probe)."""
    own = "recorder" if server is not None else victim  # the node in a process of its own
    proc = start_victim(own, runs, store_url or "")
    ensure_init()
    # The twin's clock stands while the supervisor waits for a lost recorder's return, up to
    # peer_wait_limit_s of wall time (60 s by default): 10 s here keeps the campaign affordable.
    graph = Graph(_seeded_scenario(scenario, case.seed, runs), runs, without=(own,),
                  overrides={"lab_sim": {"peer_wait_limit_s": 10.0}})
    client_node, probe = Node("fault_campaign_client"), Probe()
    for extra in (client_node, probe):
        graph.executor.add_node(extra)
    twin = graph.nodes["lab_sim"].twin
    try:
        with graph.spinning():
            client = ActionClient(client_node, RunExperiment, topics.RUN_EXPERIMENT)
            if not (client.wait_for_server(timeout_sec=60) and wait_for(lambda: own in probe.beats, 60)):
                case.problems.append(f"{own} did not come up in its own process")
                return None, probe
            goal = client.send_goal_async(RunExperiment.Goal(instruction=load_scenario(scenario).instruction))
            if not (wait_for(goal.done, 60) and goal.result().accepted):
                case.problems.append("the experiment was not accepted")
                return None, probe
            result = goal.result().get_result_async()
            if not wait_for(lambda: twin.truth_summary()["drops_landed"] >= case.trigger_drops or result.done(), 300):
                case.problems.append("dispensing did not reach the trigger")
            if result.done():
                case.problems.append(f"the run ended before the fault: {result.result().result.message}")
                return None, probe
            fault_t = twin.t
            if server is not None:
                server.crash() if how == "kill" else server.signal(signal.SIGSTOP)
            else:
                proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGSTOP)
            named = lambda: probe.naming(victim, fault_t)  # noqa: E731
            case.named = wait_for(lambda: named() or result.done(), 180) and bool(named())
            if case.named:
                anomaly = named()[0]
                case.detection_s = round(to_sec(anomaly.stamp) - fault_t, 3)
                at_hold = twin.truth_summary()["drops_landed"]
                # The twin goes on (sim time) while the victim is gone: nothing may fall but the forming drop.
                wait_for(lambda: twin.t >= to_sec(anomaly.stamp) + hold_check_s or result.done(), 180)
                case.drops_after_hold = twin.truth_summary()["drops_landed"] - at_hold
                spilled = [s for s in probe.statuses if s.degraded and to_sec(s.stamp) > to_sec(anomaly.stamp)]
                case.held = case.drops_after_hold <= 1 or (server is not None and bool(spilled))
            else:
                case.problems.append("no anomaly named the victim")
            if how == "stall":
                server.signal(signal.SIGCONT) if server is not None else proc.send_signal(signal.SIGCONT)
            if not wait_for(result.done, 600):
                case.problems.append("the run did not end")
                return None, probe
            outcome = result.result().result
            case.outcome, case.message = outcome.outcome, outcome.message[:300]
            return outcome, probe
    finally:
        graph.shutdown()
        for extra in (client_node, probe):
            extra.destroy_node()
        rclpy.try_shutdown()
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


def grade_record_and_report(case: CaseResult, probe: Probe, outcome, runs: Path, lost: bool,
                            store_url: str | None = None) -> None:
    """Every acknowledged record stored; the outcome and the report say what happened."""
    exp = outcome.experiment_id
    acked = [s.records for s in probe.statuses if s.experiment_id == exp]
    case.records_acked = max(acked, default=0)
    db = runs / exp / "records.db"
    if store_url:  # the database and the spill in the run folder, merged as the store reads them
        with open_store(store_url, spill_path=runs / exp / SPILL_NAME) as store:
            case.records_stored = len(store.load_run(exp)["fused_records"])
    elif db.exists():
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        case.records_stored = con.execute("SELECT COUNT(*) FROM fused_records").fetchone()[0]
        con.close()
    case.records_kept = case.records_acked > 0 and case.records_stored >= case.records_acked
    if not case.records_kept:
        case.problems.append(f"records: {case.records_acked} acknowledged, {case.records_stored} stored")
    gap = outcome.outcome == "completed_with_gap"
    case.honest = not (outcome.success and (lost or gap))
    if not outcome.success:
        case.honest &= report_says_interrupted(runs / exp, outcome.outcome, store_url)
    if not case.honest:
        case.problems.append(f"dishonest: success={outcome.success} outcome={outcome.outcome}")


def report_says_interrupted(run_dir: Path, outcome: str, store_url: str | None = None) -> bool:
    """`agentchemist report` of the run (as a user would regenerate it): an aborted run is 'interrupted'
    with no endpoint finding; a completed run with a gap states the gap."""
    store = ["--store", store_url] if store_url else []
    done = subprocess.run([sys.executable, "-m", "agentchemist.cli", "report", str(run_dir), *store],
                          capture_output=True, text=True, timeout=300)
    md = next(iter(sorted(run_dir.glob("report*.md"))), None)
    if done.returncode != 0 or md is None:
        return False
    text = md.read_text()
    if outcome == "completed_with_gap":
        return "gap" in text
    return "**interrupted**" in text and "No endpoint finding is stated" in text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fault_campaign", description=__doc__.split("\n\n")[0])
    p.add_argument("--faults", default=",".join(FAULTS), help="how:victim,... (how: kill | stall)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=1)
    p.add_argument("--scenario", type=Path, default=None, help="default: tests/data/scenarios/hcl_short.yaml")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--work", type=Path, default=None, help="keep the runs here (default: a temporary folder)")
    args = p.parse_args(argv)
    scenario = args.scenario or Path.cwd() / "tests" / "data" / "scenarios" / "hcl_short.yaml"
    cases = []
    with tempfile.TemporaryDirectory(prefix="fault_campaign_") as tmp:
        work = args.work or Path(tmp)
        for fault in args.faults.split(","):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                case = run_case(fault, seed, scenario, work)
                cases.append(case)
                print(f"{fault:32s} seed {seed}: held={case.held} named={case.named} records={case.records_kept} "
                      f"honest={case.honest} ({case.outcome}; {case.wall_s:.0f} s) {'; '.join(case.problems)}",
                      flush=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(c) | {"ok": c.ok} for c in cases], indent=1))
    return 0 if all(c.ok for c in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
