"""`make demo`: the paper's HCl/NaOH worked example, end to end through the real node graph in the twin.

Usage: python -m agentchemist_ros.tools.demo [--scenario FILE] [--runs DIR] [--rtf X] [--timeout S]
Prints live progress (FSM state, pH, volume, drops), then the report path and the headline results.
"""
import argparse
import json
import math
import os
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import rclpy
from rclpy.action import ActionClient
from rclpy.node import Node
from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from std_msgs.msg import String

from agentchemist import exit_codes
from agentchemist.chemistry.equilibrium import equivalence_volumes_ml
from agentchemist.paths import config_dir, default_runs_dir
from agentchemist.report.document import group_phrase
from agentchemist.sim.scenario import load_scenario
from agentchemist_interfaces.action import RunExperiment
from agentchemist_interfaces.msg import AudioEvent, ChemicalReading, FsmState, FusedRecord
from agentchemist_ros.common import topics
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE
from agentchemist_ros.common.timeconv import to_sec
from agentchemist_ros.tools.agents_apart import DEFAULT_APART, LEAD_S, agents_apart
from agentchemist_ros.tools.graph import Graph, ensure_init



class Watcher(Node):
    """Collects what a person watching the run wants to see."""

    def __init__(self):
        super().__init__("demo_watcher")
        self.state, self.ph, self.volume, self.drops, self.sim_t = "-", float("nan"), 0.0, 0, 0.0
        self.mass = float("nan")  # the balance's reading (weighing runs): the table shows it once one came
        self.transitions = 0
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, FSM)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS)
        self.create_subscription(FusedRecord, topics.RECORDS, self.on_record, RELIABLE)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING,
                                 lambda m: setattr(self, "mass", m.value) if m.quantity == "mass" else None, READINGS)
        self.create_subscription(AudioEvent, topics.AUDIO_EVENTS, self.on_event, RELIABLE)
        self.truth = None
        self.create_subscription(String, topics.GROUND_TRUTH, lambda m: setattr(self, "truth", m.data), LATCHED)
        self.client = ActionClient(self, RunExperiment, topics.RUN_EXPERIMENT)
        self.result = None
        self.feedback = ""

    def on_fsm(self, m):
        self.state = m.state
        self.transitions += 1

    def on_reading(self, m):
        if m.quantity == "pH":
            self.ph, self.sim_t = m.value, to_sec(m.header.stamp)

    def on_record(self, m):
        if m.quantity == "titrant_volume" and math.isfinite(m.value):
            self.volume = m.value

    def on_event(self, m):
        if m.kind == "droplet" and m.classification == "expected":
            self.drops += 1

    def start(self, instruction):
        if not self.client.wait_for_server(timeout_sec=30):
            raise RuntimeError("the planner's RunExperiment server did not come up")
        future = self.client.send_goal_async(RunExperiment.Goal(instruction=instruction),
                                             feedback_callback=lambda f: setattr(self, "feedback", f.feedback.fsm_state))
        future.add_done_callback(self._accepted)

    def _accepted(self, future):
        handle = future.result()
        handle.get_result_async().add_done_callback(lambda f: setattr(self, "result", f.result().result))


def progress_table(w: Watcher, wall: float, title: str = "the lab twin") -> Table:
    """The live view; what it shows fits the run: a mass column once the balance reads, pH only once measured."""
    t = Table(title=f"AgentChemist: {title}", show_header=True)
    weighing = math.isfinite(w.mass)
    cols = ["FSM state", *(["mass (g)"] if weighing else []), "pH", "titrant added (mL)", "drops heard",
            "sim time (s)", "wall (s)", "speed"]
    for col in cols:
        t.add_column(col, justify="right")
    speed = f"{w.sim_t / wall:.1f}x" if wall > 0 and w.sim_t > 0 else "-"
    ph = f"{w.ph:.2f}" if math.isfinite(w.ph) else "-"
    t.add_row(w.state, *([f"{w.mass:.3f}"] if weighing else []), ph, f"{w.volume:.3f}", str(w.drops),
              f"{w.sim_t:.0f}", f"{wall:.0f}", speed)
    return t


def headline(report_path: str) -> list[str]:
    """What the report concluded, and the equivalence volume against theory (from report.json)."""
    json_path = Path(report_path).with_suffix(".json") if report_path else None
    if json_path is None or not json_path.exists():
        return []
    data = json.loads(json_path.read_text())
    lines = list(data.get("concluded", []))
    results = data.get("sections", {}).get("results", {}) or {}
    setup = results.get("setup") or {}
    try:
        theory = equivalence_volumes_ml({setup["analyte"]: setup["analyte_m"]}, setup["analyte_volume_ml"],
                                        {setup["titrant"]: setup["titrant_m"]})
    except (KeyError, TypeError, ValueError):
        theory = []
    modules = (data.get("sections", {}).get("parameters", {}) or {}).get("modules") or {}
    drop = (modules.get("dispenser") or {}).get("drop_volume_ml") or 0.046875  # the drop the run planned with
    for eq, v_theory in zip(results.get("equivalence_points") or [], theory):
        volume = eq.get("volume_ml")
        if volume is not None and eq.get("supported"):
            dev = volume - v_theory
            lines.append(f"equivalence {eq.get('index', 1)}: {volume:.3f} mL vs theory {v_theory:.3f} mL "
                         f"({dev:+.3f} mL, {dev / drop:+.1f} drops, {100 * dev / v_theory:+.2f} %), pH "
                         f"{eq.get('ph', float('nan')):.2f}")
    lines += [f"not concluded: {x}" for x in data.get("not_concluded", [])]
    return lines


PLAIN_EVERY_S = 10.0


def ros_logs_aside(path: Path):
    """Send this process's stderr (the nodes' log lines, written by rcutils to file descriptor 2) to `path`
    while the live table shows; returns the function that puts stderr back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("a") as f:
        os.dup2(f.fileno(), 2)

    def restore():
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
    return restore


def progress_line(w: Watcher, wall: float) -> str:
    """The progress table's row as one plain line (for a pipe or a log file)."""
    mass = f"mass {w.mass:.3f} g, " if math.isfinite(w.mass) else ""
    return (f"[{wall:5.0f} s wall] state {w.state}, {mass}pH {w.ph:.2f}, titrant {w.volume:.3f} mL, "
            f"{w.drops} drops heard, twin {w.sim_t:.0f} s")


def _report_json(report_path: str) -> dict:
    path = Path(report_path).with_suffix(".json") if report_path else None
    try:
        return json.loads(path.read_text()) if path is not None and path.exists() else {}
    except (OSError, ValueError):
        return {}


def anomaly_lines(report_path: str) -> list[str]:
    """The anomalies the instruction asked to be told about, from the report (or that there were none)."""
    section = (_report_json(report_path).get("sections") or {}).get("anomalies") or {}
    records = [a for a in section.get("records") or [] if not a.get("resolution")]
    if not records:
        return ["Anomalies: none recorded."]
    groups = section.get("groups") or []
    lines = [f"[yellow]Anomalies: {len(records)}[/yellow] ({section.get('unresolved', 0)} unresolved"
             + (f", {len(groups)} kinds" if len(groups) < len(records) else "") + ")"]
    for g in groups[:20]:  # repeated ones as one line: kind and source, how many, when, the first description
        lines.append(f"  {escape(group_phrase(g))}: {escape(str(g.get('description') or ''))}")
    if len(groups) > 20:
        lines.append(f"  ... and {len(groups) - 20} more kinds (report section 8)")
    return lines


def output_paths(report_path: str) -> list[tuple[str, str]]:
    """Every file the run wrote that a person opens: the report in three formats, charts, tables, data."""
    md = Path(report_path)
    out = [("report (Markdown)", str(md)), ("report (HTML)", str(md.with_suffix(".html"))),
           ("report (JSON)", str(md.with_suffix(".json")))]
    out += [(f"chart {p.stem}", str(p)) for p in sorted(md.parent.glob("*.png"))]
    out += [(f"table {p.stem}", str(p)) for p in sorted((md.parent / "tables").glob("*.csv"))]
    for name, label in (("records.db", "database"), ("ground_truth.json", "twin ground truth")):
        if (md.parent / name).exists():
            out.append((label, str(md.parent / name)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(config_dir() / "scenarios" / "hcl_naoh.yaml"))
    parser.add_argument("--runs", default=str(default_runs_dir()), help="folder of the run folders")
    parser.add_argument("--instruction", help="instruction to run instead of the scenario's")
    parser.add_argument("--rtf", type=float, default=0.0,
                        help="real-time factor to pace the twin at (default 0: as fast as the graph keeps up)")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after this many wall seconds")
    parser.add_argument("--two-processes", action="store_true",
                        help="the agents that only listen during a titration in a second process, so the graph "
                             "uses two cores (tools/agents_apart.py; not yet the same run as in one process)")
    args = parser.parse_args(argv)
    console = Console(soft_wrap=True)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # piped output appears as it is printed, not at the end
    try:
        scenario = load_scenario(args.scenario)
    except (OSError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        return exit_codes.USAGE
    console.print(f"starting the node graph on the twin ({scenario.name}; runs in {args.runs}) ...")
    ensure_init()
    apart = DEFAULT_APART if args.two_processes else ()
    sim = {"free_run": args.rtf <= 0.0, **({"max_lead_s": LEAD_S} if apart else {})}
    graph = Graph(args.scenario, args.runs, real_time_factor=args.rtf, without=apart, overrides={"lab_sim": sim})
    watcher = Watcher()
    graph.executor.add_node(watcher)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [graph.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    instruction = args.instruction or scenario.instruction
    console.print(f"[bold]Instruction:[/bold] {escape(instruction)}")
    console.print("waiting for the planner ...")
    processes = ExitStack()
    processes.enter_context(agents_apart(args.scenario, args.runs, apart, watcher))
    start = time.monotonic()
    try:
        watcher.start(instruction)
    except RuntimeError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        stop.set()
        processes.close()
        graph.shutdown()
        rclpy.try_shutdown()
        return exit_codes.NO_ENVIRONMENT
    title = f"{scenario.name} in the lab twin"
    if console.is_terminal:
        ros_log = ros_logs_aside(Path(args.runs) / "ros.log")  # the nodes' log lines would tear the live table
        with Live(progress_table(watcher, 0.0, title), console=console, refresh_per_second=4,
                  transient=False) as live:
            while watcher.result is None and time.monotonic() - start < args.timeout:
                live.update(progress_table(watcher, time.monotonic() - start, title))
                time.sleep(0.25)
            live.update(progress_table(watcher, time.monotonic() - start, title))
        ros_log()
        console.print(f"ROS log lines of this run: {Path(args.runs) / 'ros.log'}")
    else:  # piped or logged: a plain line every PLAIN_EVERY_S, flushed, instead of a live table
        last = -PLAIN_EVERY_S
        while watcher.result is None and time.monotonic() - start < args.timeout:
            wall = time.monotonic() - start
            if wall - last >= PLAIN_EVERY_S:
                print(progress_line(watcher, wall), flush=True)
                last = wall
            time.sleep(0.25)
        print(progress_line(watcher, time.monotonic() - start), flush=True)
    processes.close()
    stop.set()
    spinner.join(timeout=5)
    result = watcher.result
    graph.nodes["lab_sim"].publish_truth()
    time.sleep(0.2)
    truth = graph.nodes["lab_sim"].twin.truth()
    graph.shutdown()
    watcher.destroy_node()
    rclpy.try_shutdown()
    if result is None:
        console.print(f"[red]no result within {args.timeout:.0f} s[/red]")
        return exit_codes.NO_ENVIRONMENT
    colour = "green" if result.success else "red"
    console.print(f"[{colour}]{result.outcome}[/{colour}]: {escape(result.message)}")
    if result.experiment_id:
        # The twin's ground truth beside the run, for grading (never read by the agents).
        run_dir = Path(args.runs) / result.experiment_id
        if run_dir.exists():
            truth.pop("ph_history", None)
            (run_dir / "ground_truth.json").write_text(json.dumps(truth, default=float))
            console.print(f"twin ground truth: {truth['drops_landed']} drops, {truth['dispensed_ml']:.3f} mL dispensed")
    if result.report_path:
        for line in headline(result.report_path):
            console.print("  " + escape(line))
        for line in anomaly_lines(result.report_path):
            console.print(line)
        console.print("[bold]Outputs:[/bold]")
        for label, path in output_paths(result.report_path):
            console.print(f"  {label:<24} {path}")
    return exit_codes.OK if result.success else exit_codes.NO


if __name__ == "__main__":
    sys.exit(main())
