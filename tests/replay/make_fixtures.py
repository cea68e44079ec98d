r"""Regenerate the replay fixture bags in tests/fixtures/bags from live runs of the twin.

    . scripts/env.sh && python tests/replay/make_fixtures.py [--out tests/fixtures/bags] [--keep-full DIR]
                              [--only hcl|ca_edta|dispense|volume|planner|weighing ...]

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

Node fixtures (nodes_*, for test_replay_planner / test_replay_action_policy / test_replay_dispenser): the
whole graph as above, with the planner's, the action policy's and the dispenser's action servers and the
vision supervisor's scene service tapped (`Taps`: goals, cancels, results and scenes are recorded with the
topics, as /replay_tap/... messages), cut from 1 s before the first goal to 1 s after the last answer,
MCAP with zstd chunks; each with a <name>_live.json (the goals' outcomes, twin truth, the pH direction the
live dispenser chose per goal):

- nodes_hcl_dispense (`--only dispense`): config/scenarios/fault_noise_burst.yaml (the short HCl titration
  to pH 10, settling after each drop; 5 s of noise on the pipette microphone at 60 s, during which the
  supervisor holds the dispenser), run to its end (~0.4 MB);
- nodes_hcl_volume (`--only volume`): hcl_short's bench, VOLUME_INSTRUCTION (1 mL of titrant, no target
  pH: the dispenser stops by itself at the volume; the supervisor then aborts the run on its titrating
  timeout, as it did at the recording commit) (~0.2 MB);
- nodes_planner (`--only planner`): config/scenarios/hcl_naoh.yaml's bench, four goals: a question
  (ask_missing_concentration), a refusal (unreachable_target), the weak acid (acetic_naoh) and the worked
  example (hcl_naoh), each plan ended by an operator halt HALT_AFTER_PLAN_S after it is out (~0.2 MB);
- nodes_weighing (`--only weighing`): config/scenarios/nacl_weighing.yaml run to its end: the action policy
  carries the beaker (asking the scene service where it stands), the dispenser pours the solid (~0.2 MB).

They were recorded at commit NODES_COMMIT (63d999a), before the issue 24 refactor moved logic out of these
nodes: the replay tests check the refactored nodes against that behaviour. nodes_hcl_volume was recorded
again from the working tree (`--only volume`, its live.json says the commit) when issue 21 made the
dispenser's settle and change-rate tests noise-aware, which changes when it squeezes. To record them again from that
commit (its code, config and interfaces; not the working tree's):

    git worktree add /tmp/wt-replay 63d999a
    cp tests/replay/make_fixtures.py tests/replay/bagdata.py /tmp/wt-replay/tests/replay/
    (cd /tmp/wt-replay/ros2_ws && . <repo>/scripts/env.sh && AMENT_PREFIX_PATH=$VIRTUAL_ENV \
        CMAKE_PREFIX_PATH=$VIRTUAL_ENV colcon build --merge-install --base-paths src/agentchemist_interfaces \
        --cmake-args -DPython3_EXECUTABLE=$VIRTUAL_ENV/bin/python -DBUILD_TESTING=OFF)
    # an environment with only the worktree's paths (no <repo>/ros2_ws/install: its interface libraries
    # would be loaded instead of the worktree's): VIRTUAL_ENV and PATH as scripts/env.sh sets them, and
    W=/tmp/wt-replay; AMENT_PREFIX_PATH=$W/ros2_ws/install:$VIRTUAL_ENV LD_LIBRARY_PATH=$W/ros2_ws/install/lib \
    PYTHONPATH=$W/src:$W/ros2_ws/src/agentchemist_ros:$W/ros2_ws/install/lib/python3.11/site-packages \
    AGENTCHEMIST_CONFIG_DIR=$W/config RMW_IMPLEMENTATION=rmw_fastrtps_cpp \
        python /tmp/wt-replay/tests/replay/make_fixtures.py --out tests/fixtures/bags --only dispense \
        --only volume --only planner --only weighing
    git worktree remove /tmp/wt-replay --force

Each *_live.json says the commit its run was recorded at ("recorded_at") and where the node code came
from. The live graph's delivery order is its executor's: a new recording may interleave a tick's messages
differently, and test_replay_dispenser's `_after_timer` (which inputs reached the dispenser after its
timer) may then need another look.

Takes about 30 s of wall time per run. Commit the outputs.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("AGENTCHEMIST_CONFIG_DIR", str(REPO / "config"))
os.environ.setdefault("MPLBACKEND", "Agg")
# A private DDS domain, claimed with the scenario runner's lock files: a random one once landed on a library
# run's domain, and each graph received the other's plan and audio.
from agentchemist_ros.tools.scenario_runner import claim_domain  # noqa: E402

_DOMAIN, _DOMAIN_LOCK = claim_domain()  # held while this process runs
os.environ["ROS_DOMAIN_ID"] = os.environ.get("AGENTCHEMIST_FIXTURE_DOMAIN", str(_DOMAIN))

import rclpy  # noqa: E402
from rclpy.action import ActionClient  # noqa: E402
from rclpy.node import Node  # noqa: E402

from agentchemist.bag import BagReader, WriterOptions, copy_bag, select_topics  # noqa: E402
from agentchemist.sim.scenario import load_scenario, read_scenario_yaml  # noqa: E402
from agentchemist_interfaces.action import RunExperiment  # noqa: E402
try:
    from agentchemist_ros.tools.bag.recorder import BagRecorder  # noqa: E402
    from agentchemist_ros.tools.graph import Graph, ensure_init  # noqa: E402
except ImportError:  # the code before the tools/ move (commit 63d999a recorded the node fixtures)
    from agentchemist_ros.bag.recorder import BagRecorder  # noqa: E402
    from agentchemist_ros.graph import Graph, ensure_init  # noqa: E402

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


# ------------------------------------------------------------------------------------------------------------
# Node fixtures: the planner, the action policy and the dispenser controller, each against what it did live.
# Actions and services are not topics, so the live nodes' servers are tapped (`Taps`): every goal they
# started (`<Action>_SendGoal_Request`: goal id + goal), every cancel they accepted (action_msgs GoalInfo),
# how every goal ended (action_msgs GoalStatus, then `<Action>_GetResult_Response`: status + result), and
# every DescribeScene answer (its fields as JSON in a std_msgs/String: rosbags holds no srv/ types), each
# stamped with the serving node's sim time, on /replay_tap/<action or service name>/... topics merged
# into the bag.

NODES_COMMIT = "63d999a"   #: the commit whose nodes recorded the node fixtures (before the issue 24 refactor)
TAP = "/replay_tap"
JOINTS = "/joint_states"
GRIPPERS = ("/left_gripper_controller/commands", "/right_gripper_controller/commands")
ARMS = ("/left_arm_controller/joint_trajectory", "/right_arm_controller/joint_trajectory")
NODE_TOPICS = ("/agentchemist/plan", "/agentchemist/messages", "/agentchemist/fsm_state", "/agentchemist/quantity",
               "/agentchemist/anomalies", "/agentchemist/audio_events", "/lab/ph_meter/reading", JOINTS,
               *GRIPPERS, *ARMS)
#: the live run's statistical volume, once per drop, goes to the recorder: only the dispenser's estimates
#: are kept from /agentchemist/quantity (the audio and vision channels are other nodes' outputs)
CONFIG_SCENARIOS = REPO / "config" / "scenarios"
#: volume target: the scenario's titration with the titrant volume stated and no target pH (the dispenser
#: stops by itself at the volume); no "act on a settled pH", so it squeezes drop after drop.
VOLUME_INSTRUCTION = ("Titrate 5 mL of 0.1 M hydrochloric acid in the beaker on the magnetic stirrer by adding 1 mL "
                      "of 0.1 M sodium hydroxide with the rubber-headed pipette. Record the pH and the volume after "
                      "each drop.")
TAP_MARGIN_S = 1.0  #: a node fixture starts this long before the first goal and ends this long after the last answer
HALT_AFTER_PLAN_S = 2.0  #: planner session: an operator halt this long (sim s) after each plan ends the run


def _time_msg(ns: int):
    from builtin_interfaces.msg import Time
    return Time(sec=ns // 10**9, nanosec=ns % 10**9)


class Taps:
    """What the live nodes' action servers and scene service were asked and answered (see above)."""

    def __init__(self):
        self.messages: list[tuple[int, int, str, bytes]] = []   # (sim ns, order, topic, CDR bytes)
        self.types: dict[str, str] = {}                          # topic -> message type
        self.directions: dict[str, int] = {}                     # dispense goal id (hex) -> live pH direction

    def add(self, topic: str, msgtype: str, ns: int, msg) -> None:
        from rclpy.serialization import serialize_message
        self.types[topic] = msgtype
        self.messages.append((ns, len(self.messages), topic, serialize_message(msg)))

    def install(self, graph) -> None:
        from agentchemist_interfaces.action import Dispense, ExecuteSubtask, RunExperiment
        for name, action_type, topic in (("planner", RunExperiment, "/agentchemist/run_experiment"),
                                         ("action_policy", ExecuteSubtask, "/agentchemist/execute_subtask"),
                                         ("dispenser_controller", Dispense, "/agentchemist/dispense")):
            self.action(graph.nodes[name], graph.nodes[name].server, action_type, topic)
        vision = graph.nodes["vision_supervisor"]
        scene = next(s for s in vision.services if s.srv_name == "/agentchemist/describe_scene")
        self.scene(vision, scene, "/agentchemist/describe_scene")

    def action(self, node, server, action_type, name: str) -> None:
        import inspect

        from action_msgs.msg import GoalInfo, GoalStatus
        from rclpy.action import CancelResponse

        interface = f"agentchemist_interfaces/action/{action_type.__name__}"
        execute, cancel = server._execute_callback, server._cancel_callback

        def now() -> int:
            return node.get_clock().now().nanoseconds

        async def tapped_execute(handle):
            self.add(f"{TAP}{name}/goal", interface + "_SendGoal_Request", now(),
                     action_type.Impl.SendGoalService.Request(goal_id=handle.goal_id, goal=handle.request))
            result = execute(handle)
            if inspect.isawaitable(result):
                result = await result
            ended = now()
            info = GoalInfo(goal_id=handle.goal_id, stamp=_time_msg(ended))
            self.add(f"{TAP}{name}/status", "action_msgs/msg/GoalStatus", ended,
                     GoalStatus(goal_info=info, status=handle.status))
            self.add(f"{TAP}{name}/result", interface + "_GetResult_Response", ended,
                     action_type.Impl.GetResultService.Response(status=handle.status, result=result))
            direction = getattr(node, "experiment_direction", None)  # (experiment, target pH, +1/-1) at NODES_COMMIT
            if direction and direction[0] == getattr(handle.request, "experiment_id", None) and direction[2]:
                self.directions[bytes(handle.goal_id.uuid).hex()] = int(direction[2])
            return result

        def tapped_cancel(handle):
            response = cancel(handle)
            if response == CancelResponse.ACCEPT:
                at = now()
                self.add(f"{TAP}{name}/cancel", "action_msgs/msg/GoalInfo", at,
                         GoalInfo(goal_id=handle.goal_id, stamp=_time_msg(at)))
            return response

        server.register_execute_callback(tapped_execute)
        server.register_cancel_callback(tapped_cancel)

    def scene(self, node, service, name: str) -> None:
        from std_msgs.msg import String
        answer = service.callback

        def tapped(request, response):
            response = answer(request, response)
            fields = {"success": response.success, "message": response.message, "checks_json": response.checks_json,
                      "header": {"stamp": {"sec": response.header.stamp.sec, "nanosec": response.header.stamp.nanosec},
                                 "frame_id": response.header.frame_id},
                      "objects": [_fields(o) for o in response.objects], "request": {"camera": request.camera}}
            self.add(f"{TAP}{name}/response", "std_msgs/msg/String", node.get_clock().now().nanoseconds,
                     String(data=json.dumps(fields)))
            return response
        service.callback = tapped


def _fields(msg) -> dict:
    out = {}
    for name in msg.get_fields_and_field_types():
        value = getattr(msg, name)
        out[name] = _fields(value) if hasattr(value, "get_fields_and_field_types") else value
    return out


@dataclass
class Goal:
    """One RunExperiment goal of a tapped run. halt_after_plan_s: an operator halt (a halt anomaly, as a
    person pressing stop) this long after the plan ends the experiment (None: it runs to its end)."""

    instruction: str
    halt_after_plan_s: float | None = None


def tapped_run(scenario: Path, goals: list[Goal], record: list[str], full_bag: Path, runs: Path, *,
               overrides: dict | None = None, timeout_s: float = 300.0) -> tuple[list[dict], Taps]:
    """Run `goals` one after the other on the twin of `scenario` through the whole graph with its servers
    tapped, recording the `record` topics into `full_bag` stamped with sim time; (what each goal's live
    run returned, the taps)."""
    from agentchemist_interfaces.msg import Anomaly, ExperimentPlan
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    _code()
    ensure_init()
    graph = Graph(scenario, runs, overrides=overrides)
    taps = Taps()
    taps.install(graph)
    recorder = BagRecorder(full_bag, select_topics(record),
                           WriterOptions(storage="mcap", compression="zstd", strictly_increasing=True,
                                         ros_distro="jazzy"))
    graph.time_source.attach_clock(recorder.get_clock())
    graph.executor.add_node(recorder)
    client_node = Node("fixture_client")
    graph.time_source.attach_clock(client_node.get_clock())
    graph.executor.add_node(client_node)
    client = ActionClient(client_node, RunExperiment, "/agentchemist/run_experiment")
    plans: list = []
    client_node.create_subscription(ExperimentPlan, "/agentchemist/plan", plans.append,
                                    QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE,
                                               durability=DurabilityPolicy.TRANSIENT_LOCAL))
    halt = client_node.create_publisher(Anomaly, "/agentchemist/anomalies",
                                        QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [graph.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    outcomes = []
    try:
        if not client.wait_for_server(timeout_sec=30):
            raise RuntimeError("the planner's RunExperiment server did not come up")
        for goal in goals:
            known = len(plans)
            sent = client.send_goal_async(RunExperiment.Goal(instruction=goal.instruction))
            end = time.monotonic() + timeout_s
            while not sent.done() and time.monotonic() < end:
                time.sleep(0.05)
            result_future = sent.result().get_result_async()
            halted = goal.halt_after_plan_s is None
            while not result_future.done() and time.monotonic() < end:
                if not halted and len(plans) > known:
                    plan = plans[-1]
                    now = client_node.get_clock().now()
                    if now.nanoseconds * 1e-9 >= plan.stamp.sec + plan.stamp.nanosec * 1e-9 + goal.halt_after_plan_s:
                        halt.publish(Anomaly(stamp=now.to_msg(), experiment_id=plan.experiment_id, source="operator",
                                             kind="operator_stop", severity="halt", response="abort",
                                             description="stopped by the fixture recorder once the plan was out"))
                        halted = True
                time.sleep(0.02)
            if not result_future.done():
                raise RuntimeError(f"{goal.instruction[:40]}...: no result within {timeout_s} s")
            result = result_future.result().result
            outcomes.append({"instruction": goal.instruction, "outcome": result.outcome, "success": result.success,
                             "message": result.message, "experiment_id": result.experiment_id,
                             "halted_after_plan_s": goal.halt_after_plan_s})
            print(f"  {result.outcome}: {result.message[:100]}")
            time.sleep(1.0)  # the last records and reports reach the recorder
        outcomes.append({"truth": {k: v for k, v in graph.nodes["lab_sim"].twin.truth().items()
                                   if isinstance(v, (int, float, str, bool))}})
    finally:
        stop.set()
        spinner.join(timeout=10)
        recorder.close()
        graph.shutdown()
        recorder.destroy_node()
        client_node.destroy_node()
        rclpy.try_shutdown()
    return outcomes, taps


def write_fixture(full: Path, out: Path, topics, taps: Taps, *, keep=None,
                  start_ns: int | None = None, stop_ns: int | None = None) -> None:
    """`topics` of the full recording (within the window; latched ones keep their last earlier message)
    and every tap, merged in time into `out` (MCAP, zstd chunks). keep(topic, rclpy-free BagMessage) -> bool
    drops messages a test does not need."""
    import heapq

    from agentchemist.bag import BagWriter, QosProfile
    sys.path.insert(0, str(REPO))
    from tests.replay.bagdata import interface_msgdef

    if out.exists():
        shutil.rmtree(out)
    tap_qos = [QosProfile(depth=10, reliability="reliable", durability="volatile")]
    with BagReader(full) as reader:
        infos = reader.topics()
        wanted = [t for t in topics if t in infos and infos[t].count]
        options = WriterOptions(storage="mcap", compression="zstd", strictly_increasing=True, ros_distro="jazzy")
        with BagWriter(out, options, types=reader.types) as writer:
            for name in wanted:
                info = infos[name]
                writer.add_topic(name, info.msgtype, info.offered_qos, msgdef=info.msgdef or None,
                                 type_hash=info.type_hash or None)
            for topic, msgtype in taps.types.items():
                if "/action/" in msgtype:
                    msgdef, type_hash = interface_msgdef(reader.types, msgtype)
                    writer.add_topic(topic, msgtype, tap_qos, msgdef=msgdef, type_hash=type_hash)
                else:
                    writer.add_topic(topic, msgtype, tap_qos)
            latched = []
            if start_ns is not None:
                last = {}
                for msg in reader.messages([n for n in wanted if infos[n].latched], None, start_ns):
                    last[msg.topic] = msg
                latched = sorted(last.values(), key=lambda m: m.timestamp)
            recorded = ((m.timestamp, 0, m.topic, m.data)
                        for m in (*latched, *reader.messages(wanted, start_ns, stop_ns)) if keep is None or keep(m))
            tapped = sorted((ns, 1, order, topic, data) for ns, order, topic, data in taps.messages
                            if (start_ns is None or ns >= start_ns) and (stop_ns is None or ns < stop_ns))
            recorded = ((ns, kind, 0, topic, data) for ns, kind, topic, data in recorded)
            for ns, _kind, _order, topic, data in heapq.merge(recorded, tapped, key=lambda m: m[:3]):
                writer.write(topic, ns, data)


def statistical_only(msg) -> bool:
    """Keep of /agentchemist/quantity only the dispenser's statistical volumes (the rest are other nodes')."""
    if msg.topic != "/agentchemist/quantity":
        return True
    from rclpy.serialization import deserialize_message

    from agentchemist_interfaces.msg import QuantityEstimate
    return deserialize_message(msg.data, QuantityEstimate).channel == "statistical"


def _node_fixture(name: str, scenario: Path, goals: list[Goal], out: Path, tmp: Path, keep_full: Path | None, *,
                  overrides: dict | None = None, note: str = "") -> None:
    full = tmp / f"{name}_full"
    started = time.monotonic()
    outcomes, taps = tapped_run(scenario, goals, ["agents", *NODE_TOPICS, "/lab/balance/reading"], full,
                                tmp / f"{name}_runs", overrides=overrides)
    print(f"{name}: {len(goals)} goal(s) in {time.monotonic() - started:.0f} s wall")
    # from TAP_MARGIN_S before the first goal to TAP_MARGIN_S after the last answer (the twin idles before)
    first, last = min(m[0] for m in taps.messages), max(m[0] for m in taps.messages)
    margin = int(TAP_MARGIN_S * 1e9)
    write_fixture(full, out / name, NODE_TOPICS + (("/lab/balance/reading",) if "weigh" in name else ()), taps,
                  keep=statistical_only, start_ns=first - margin, stop_ns=last + margin)
    live = {"recorded_at": _commit(), "code": _code(), "scenario": str(scenario.relative_to(REPO)), "note": note,
            "goals": outcomes[:-1], "truth": outcomes[-1]["truth"], "dispense_directions": taps.directions}
    (out / f"{name}_live.json").write_text(json.dumps(live, indent=2, default=float) + "\n")
    if keep_full:
        shutil.copytree(full, keep_full / f"{name}_full", dirs_exist_ok=True)


def _commit() -> str:
    """The commit of the code that ran (the repository this script is in), '+' when its tree differs."""
    import subprocess
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "src", "ros2_ws/src", "config"],
                           capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def _code() -> dict:
    """Where the nodes' code and interfaces came from; refuses a mix (the recording must be one commit's)."""
    import agentchemist
    import agentchemist_interfaces
    import agentchemist_ros
    where = {m.__name__: str(Path(m.__file__).parent)
             for m in (agentchemist, agentchemist_ros, agentchemist_interfaces)}
    outside = [f"{name} from {path}" for name, path in where.items()
               if name != "agentchemist_interfaces" and not Path(path).is_relative_to(REPO)]
    if outside:
        raise RuntimeError(f"the node code is not this repository's ({REPO}): " + "; ".join(outside))
    return where


def make_dispense(out: Path, tmp: Path, keep_full: Path | None) -> None:
    """nodes_hcl_dispense: fault_noise_burst (the short HCl titration to pH 10 with 5 s of noise on the
    pipette microphone at 60 s: the supervisor holds the dispenser while the microphone is deaf)."""
    scenario = CONFIG_SCENARIOS / "fault_noise_burst.yaml"
    _node_fixture("nodes_hcl_dispense", scenario, [Goal(load_scenario(scenario).instruction)], out, tmp, keep_full,
                  note="pH target with settle-each-drop, hold/release around an audio noise burst")


def make_volume(out: Path, tmp: Path, keep_full: Path | None) -> None:
    """nodes_hcl_volume: hcl_short's bench, 1 mL of titrant and no target pH (the dispenser's volume stop)."""
    _node_fixture("nodes_hcl_volume", SCENARIO, [Goal(VOLUME_INSTRUCTION)], out, tmp, keep_full,
                  note="volume target, no settle: the dispenser stops by itself")


def make_planner(out: Path, tmp: Path, keep_full: Path | None) -> None:
    """nodes_planner: the worked example's bench (hcl_naoh); a question, a refusal, the weak acid and the
    worked example, the two plans each halted by the operator HALT_AFTER_PLAN_S after they are out."""
    instruction = {n: load_scenario(CONFIG_SCENARIOS / f"{n}.yaml").instruction
                   for n in ("ask_missing_concentration", "unreachable_target", "acetic_naoh", "hcl_naoh")}
    goals = [Goal(instruction["ask_missing_concentration"]), Goal(instruction["unreachable_target"]),
             Goal(instruction["acetic_naoh"], HALT_AFTER_PLAN_S), Goal(instruction["hcl_naoh"], HALT_AFTER_PLAN_S)]
    _node_fixture("nodes_planner", CONFIG_SCENARIOS / "hcl_naoh.yaml", goals, out, tmp, keep_full,
                  note="question, refusal, weak acid and worked example plans (each halted after its plan)")


def make_weighing(out: Path, tmp: Path, keep_full: Path | None) -> None:
    """nodes_weighing: nacl_weighing run to its end (carrying the beaker: the scene service; a solid pour)."""
    scenario = CONFIG_SCENARIOS / "nacl_weighing.yaml"
    _node_fixture("nodes_weighing", scenario, [Goal(load_scenario(scenario).instruction)], out, tmp, keep_full,
                  note="weighing and dissolution: beaker carried by the action policy, solid poured by the dispenser")


FIXTURES = {"hcl": make_hcl, "ca_edta": make_ca_edta, "dispense": make_dispense, "volume": make_volume,
            "planner": make_planner, "weighing": make_weighing}


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
