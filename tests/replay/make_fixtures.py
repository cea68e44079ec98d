"""Regenerate the replay fixture bags in tests/fixtures/bags from live runs of the twin.

    . scripts/env.sh && python tests/replay/make_fixtures.py [--out tests/fixtures/bags] [--keep-full DIR]
                                                             [--only hcl|ca_edta ...]

Each run goes through the whole graph (lab_sim + every agent, one process, sim time) with our BagRecorder
recording, stamped with the twin's sim time.

HCl/NaOH: tests/data/scenarios/hcl_short.yaml, recording the agents' topics, the instrument readings and
the right gripper microphone. The instruction asks for pH 11.5 instead of the scenario's 10 so the run
goes past the equivalence point and the report has an equivalence volume to compare. It cuts:

- hcl_short_agents/  (sqlite3): every recorded topic except the microphone, the whole run;
- hcl_short_audio/   (MCAP, zstd chunks): microphone + FSM state + agent messages + audio events, from
  the start of the run to shortly after the AUDIO_DROPS-th expected drop (a full run of audio would be
  ~14 MB compressed);
- hcl_short_live.json: what the live run concluded (report results, ground truth) for the replay tests.

Ca/EDTA: tests/data/scenarios/ca_edta_short.yaml (the endpoint read from the liquid's colour on the front
camera), with a noise-free camera and the camera and pH meter at 1 Hz (CA_CAMERAS, CA_LAB_SIM: why below),
recording the agents' topics, the readings and the front camera for the whole run:

- ca_edta_short/      (MCAP, zstd chunks): everything recorded (~1.2 MB: noise-free frames of a slowly
  changing bench compress to ~2 kB each);
- ca_edta_short_live.json: what the live run concluded, with the report's full results section
  (endpoint volume and time, calcium concentration) and the changes made to the scenario.

Takes about 30 s of wall time per run. Commit the outputs.
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
# A private DDS domain: other graphs on this machine must not leak into the recording.
os.environ["ROS_DOMAIN_ID"] = os.environ.get("AGENTCHEMIST_FIXTURE_DOMAIN", str(random.randint(101, 200)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("AGENTCHEMIST_CONFIG_DIR", str(REPO / "config"))
os.environ.setdefault("MPLBACKEND", "Agg")

import rclpy  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402

from agentchemist.bag import BagReader, WriterOptions, copy_bag, select_topics  # noqa: E402
from agentchemist.sim.scenario import load_scenario, read_scenario_yaml  # noqa: E402
from agentchemist_interfaces.action import RunExperiment  # noqa: E402
from agentchemist_ros.tools.bag.recorder import BagRecorder  # noqa: E402
from agentchemist_ros.tools.graph import Graph, ensure_init  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"
TARGET_PH = 11.5
MIC = "/audio/right_gripper/raw"
READINGS = ("/lab/ph_meter/reading", "/lab/balance/reading")
AUDIO_TOPICS = (MIC, "/agentchemist/fsm_state", "/agentchemist/messages", "/agentchemist/audio_events",
                "/agentchemist/quantity")
AUDIO_DROPS = 10          # expected drops kept in the audio fixture
AUDIO_TAIL_S = 1.5        # audio kept after the last of them (s)

CA_SCENARIO = REPO / "tests" / "data" / "scenarios" / "ca_edta_short.yaml"
FRONT = "/camera/front/color/image_raw"
#: The camera at 1 Hz as in the Ca/EDTA graph test (the scenario says 2 Hz; the colour confirmation needs
#: frames at most colour_max_gap_s = 2 s apart); the pH meter at 1 Hz (a bench meter's rate; the twin's
#: default is 5 Hz): the endpoint is read from the colour, and fewer readings keep the replays short.
CA_LAB_SIM = {"camera_rate_hz": 1.0, "ph_rate_hz": 1.0}
#: No sensor noise on the camera: a noisy 320 x 240 frame does not compress (~150 kB each, ~50 MB for
#: the run); noise-free frames of a slowly changing scene compress to ~2 kB each in zstd MCAP chunks.
#: 320 x 240 is the smallest size at which the ArUco tags (beaker, scene check) still decode.
CA_CAMERAS = {"noise_sd": 0.0}


def live_run(scenario: Path, instruction: str, record: list[str], full_bag: Path, runs: Path, *,
             overrides: dict | None = None, timeout_s: float = 300.0) -> dict:
    """Run `instruction` on the twin of `scenario` through the whole graph, recording the `record`
    topics (names or presets) into `full_bag` (MCAP, zstd) stamped with sim time; return what the live
    run concluded."""
    ensure_init()
    graph = Graph(scenario, runs, overrides=overrides)
    recorder = BagRecorder(full_bag, select_topics(record),
                           WriterOptions(storage="mcap", compression="zstd", strictly_increasing=True,
                                         ros_distro="jazzy"))
    graph.time_source.attach_clock(recorder.get_clock())  # stamp with the twin's sim time
    graph.executor.add_node(recorder)
    client_node = Node("fixture_client")
    graph.executor.add_node(client_node)
    client = ActionClient(client_node, RunExperiment, "/agentchemist/run_experiment")
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [graph.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    try:
        if not client.wait_for_server(timeout_sec=30):
            raise RuntimeError("the planner's RunExperiment server did not come up")
        goal = client.send_goal_async(RunExperiment.Goal(instruction=instruction))
        end = time.monotonic() + timeout_s
        while not goal.done() and time.monotonic() < end:
            time.sleep(0.05)
        result_future = goal.result().get_result_async()
        while not result_future.done() and time.monotonic() < end:
            time.sleep(0.1)
        if not result_future.done():
            raise RuntimeError(f"the live run did not finish within {timeout_s} s")
        time.sleep(1.0)  # the summarizer's report_written and the last records reach the recorder
        result = result_future.result().result
        truth = graph.nodes["lab_sim"].twin.truth()
    finally:
        stop.set()
        spinner.join(timeout=10)
        recorder.close()
        graph.shutdown()
        recorder.destroy_node()
        client_node.destroy_node()
        rclpy.try_shutdown()
    if not result.success:
        raise RuntimeError(f"the live run failed: {result.outcome}: {result.message}")
    report = json.loads(Path(result.report_path).with_suffix(".json").read_text())
    truth.pop("ph_history", None)
    results = report["sections"]["results"]
    return {
        "scenario": str(scenario), "instruction": instruction, "experiment_id": result.experiment_id,
        "outcome": result.outcome, "status": report.get("status"),
        "equivalence_points": results.get("equivalence_points"), "total_volume_ml": results.get("total_volume_ml"),
        "drops": results.get("drops"), "final_ph": results.get("final_ph"),
        "analyte_m": (results.get("concentration") or {}).get("analyte_m"),
        "truth": {k: v for k, v in truth.items() if isinstance(v, (int, float, str, bool))},
        "results": results,
    }


def audio_window(full_bag: Path) -> tuple[int, int]:
    """From the first message to AUDIO_TAIL_S after the AUDIO_DROPS-th expected droplet."""
    with BagReader(full_bag) as reader:
        start = reader.info().start_ns
        onsets = []
        for msg in reader.messages(["/agentchemist/audio_events"]):
            event = reader.decode(msg)
            if event.kind == "droplet" and event.classification == "expected":
                onsets.append(event.end.sec * 10**9 + event.end.nanosec)
    if len(onsets) < AUDIO_DROPS:
        raise RuntimeError(f"only {len(onsets)} expected drops in the live run; need {AUDIO_DROPS}")
    return start, onsets[AUDIO_DROPS - 1] + int(AUDIO_TAIL_S * 1e9)


def make_hcl(out: Path, tmp: Path, keep_full: Path | None) -> None:
    full = tmp / "hcl_full"
    instruction = load_scenario(SCENARIO).instruction.replace("until the pH reaches 10",
                                                              f"until the pH reaches {TARGET_PH}")
    assert str(TARGET_PH) in instruction, "the scenario's instruction changed: update make_fixtures.py"
    started = time.monotonic()
    live = live_run(SCENARIO, instruction, ["agents", *READINGS, MIC], full, tmp / "hcl_runs")
    live.pop("results")
    live["scenario"] = str(SCENARIO.relative_to(REPO))
    print(f"HCl live run: {live['outcome']} in {time.monotonic() - started:.0f} s wall; "
          f"equivalence {live['equivalence_points']}")
    for name in ("hcl_short_agents", "hcl_short_audio"):
        if (out / name).exists():
            shutil.rmtree(out / name)
    with BagReader(full) as reader:
        topics = [t.name for t in reader.info().topics if t.count]
    copy_bag(full, out / "hcl_short_agents", topics=[t for t in topics if t != MIC],
             options=WriterOptions(storage="sqlite3", ros_distro="jazzy"))
    start, stop = audio_window(full)
    copy_bag(full, out / "hcl_short_audio", topics=list(AUDIO_TOPICS), start_ns=start, stop_ns=stop,
             options=WriterOptions(storage="mcap", compression="zstd", ros_distro="jazzy"))
    live["audio_window_ns"] = [start, stop]
    (out / "hcl_short_live.json").write_text(json.dumps(live, indent=2, default=float) + "\n")
    if keep_full:
        shutil.copytree(full, keep_full / "hcl_full", dirs_exist_ok=True)


def ca_edta_scenario(tmp: Path) -> Path:
    """ca_edta_short.yaml with CA_CAMERAS applied (written to `tmp`)."""
    data = read_scenario_yaml(CA_SCENARIO)
    data["cameras"] = {**data.get("cameras", {}), **CA_CAMERAS}
    path = tmp / CA_SCENARIO.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    load_scenario(path)  # still a valid scenario
    return path


def make_ca_edta(out: Path, tmp: Path, keep_full: Path | None) -> None:
    full = tmp / "ca_edta_full"
    started = time.monotonic()
    live = live_run(ca_edta_scenario(tmp), load_scenario(CA_SCENARIO).instruction, ["agents", *READINGS, FRONT],
                    full, tmp / "ca_runs", overrides={"lab_sim": CA_LAB_SIM})
    live["scenario"] = str(CA_SCENARIO.relative_to(REPO))
    live["scenario_changes"] = {"cameras": CA_CAMERAS, "lab_sim": CA_LAB_SIM}
    print(f"Ca/EDTA live run: {live['outcome']} in {time.monotonic() - started:.0f} s wall; "
          f"endpoint {live['results'].get('endpoint_volume_ml')} mL")
    if (out / "ca_edta_short").exists():
        shutil.rmtree(out / "ca_edta_short")
    with BagReader(full) as reader:
        topics = [t.name for t in reader.info().topics if t.count]
    copy_bag(full, out / "ca_edta_short", topics=topics,
             options=WriterOptions(storage="mcap", compression="zstd", ros_distro="jazzy"))
    (out / "ca_edta_short_live.json").write_text(json.dumps(live, indent=2, default=float) + "\n")
    if keep_full:
        shutil.copytree(full, keep_full / "ca_edta_full", dirs_exist_ok=True)


FIXTURES = {"hcl": make_hcl, "ca_edta": make_ca_edta}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "bags"))
    parser.add_argument("--keep-full", help="also keep the full recordings in this folder")
    parser.add_argument("--only", choices=sorted(FIXTURES), action="append",
                        help="regenerate only these fixtures (repeatable; default: all)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    keep = Path(args.keep_full) if args.keep_full else None
    for name in args.only or list(FIXTURES):
        with tempfile.TemporaryDirectory(prefix="agentchemist-fixtures-") as tmp:
            FIXTURES[name](out, Path(tmp), keep)
    for path in sorted(out.rglob("*")):
        if path.is_file():
            print(f"{path.relative_to(out)}: {path.stat().st_size / 1e6:.3f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
