"""Latencies through DDS, in wall time: the real nodes, each in its own OS process, and a probe in this one.

Every figure is wall time measured in the probe's process (time.monotonic, one clock for the send and the
arrival), through real rclpy / Fast DDS between processes; the nodes run on wall-clock ROS time
(use_sim_time false, no /clock: nothing here needs the twin's clock). Each measurement is taken quiet and
with a CPU hog per core beside it (busy Python loops at normal priority, as bench/piper.py does); the
1-minute load average before each is written beside it.

a. pH reading across the target -> the gripper's hold (`ph_to_hold`, goal p99 <= 10 ms). The real
   dispenser_controller runs a Dispense goal (target pH 7, rising) while the probe plays the pH meter
   (ChemicalReading at 20 Hz, pH 4 with 0.001 noise) and the gripper (it answers every command on
   /right_gripper_controller/commands with a JointState at that opening). Once the gripper closes, the
   probe publishes one reading across the target (pH 8) and times the first gripper command that stops
   closing (the hold; DispenserState WAIT confirms it). What holds the gripper here is the dispenser's own
   change check (a reading that jumps off its window: WAIT, change_rate_high): the endpoint judge's hold
   (vision_supervisor, fsm/endpoint.py) comes from a window's mean at the target, later by design.
   `hold_message_to_hold` times that hold's last hop: the judge's `hold` AgentMessage -> the gripper's hold.
b. drop sound -> AudioEvent (`drop_to_audio_event`, goal p99 <= 50 ms). The real audio_supervisor is fed
   AudioChunks at real-time pace, cut from the twin's contact audio (agentchemist.sim.audio, drops at known
   onsets, 20 dB SNR) while the probe's DispenserState says the dispenser squeezes (drops expected: the
   drops the dispenser counts); chunk k is sent when its last sample would have been captured. Latency =
   the AudioEvent's arrival - the drop's onset in the world (when that sample was "heard": the stream's
   start + its onset), so it holds the chunk's buffering (the onset is, on average, half a chunk before
   the chunk is sent), the detector's wait for a verdict (decide_after_s into the ring, or its end), and
   DDS. For chunks of 10, 20, 50 and 100 ms, with the node's CPU % (of one core) for each.
c. camera frame -> colour (`frame_to_colour`). The real vision_supervisor runs the Ca/EDTA plan (the
   probe holds its first subtask, so the machine stays where colour is tracked from the start); the
   probe publishes front-camera frames drawn by the twin, magenta and sapphire blue in turn (the same
   beaker before and past equivalence), and times each frame -> the colour_hue QuantityEstimate the
   supervisor derives from it (stamped with the frame). That hue is what its colour verdicts (the
   colour endpoint, colour_stable) are taken from, in the same callback.
d. record published -> durable (`record_to_durable`). The real recorder records an experiment (the probe
   publishes its plan); the probe publishes Anomaly messages and polls the run's SQLite file (WAL, read
   only) for each row: published -> committed row. Also -> the recorder's acknowledgement that covers it
   (the first RecorderStatus whose stored_through is at or after the message's stamp): what the
   supervisor acts on.

Run:  . scripts/env.sh && python bench/latency.py [--samples 60] [--out bench/results/latency.json]
      python bench/latency.py --quick    (a few samples of each, quiet only: the smoke test's run)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench import dds_bench  # noqa: E402  (keeps DDS on this machine, in a domain of its own)
from bench.dds_bench import Spinner, percentiles, wait_until  # noqa: E402

TARGET_PH, BELOW_PH, ACROSS_PH, PH_NOISE = 7.0, 4.0, 8.0, 0.001
READING_PERIOD_S = 0.05
START_OPENING_MM = 40.0
CHUNKS_S = (0.01, 0.02, 0.05, 0.1)
SAMPLE_RATE = 48000
MEASUREMENTS = ("ph_to_hold", "hold_message_to_hold", "drop_to_audio_event", "frame_to_colour", "record_to_durable")
GOALS_MS = {"ph_to_hold": 10.0, "hold_message_to_hold": 10.0, "drop_to_audio_event": 50.0}


def stamp_msg(t: float):
    from builtin_interfaces.msg import Time
    sec = math.floor(t)
    return Time(sec=int(sec), nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def stamp_sec(msg) -> float:
    return msg.sec + msg.nanosec * 1e-9


def node_log(tmp: Path, name: str) -> Path:
    return tmp / f"{name}.log"


# ------------------------------------------------------------------------------------------------ a. pH -> hold
class DispenserProbe:
    """The pH meter, the gripper and the judge's hold for one dispenser_controller process."""

    def __init__(self):
        import rclpy.node
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        from agentchemist_interfaces.action import Dispense
        from agentchemist_interfaces.msg import AgentMessage, ChemicalReading, DispenserState
        from agentchemist_ros.common import topics
        from agentchemist_ros.common.qos import FSM, READINGS, RELIABLE

        self.msgs = {"JointState": JointState, "ChemicalReading": ChemicalReading, "AgentMessage": AgentMessage,
                     "Dispense": Dispense}
        self.node = rclpy.node.Node(f"latency_probe_{uuid.uuid4().hex[:6]}")
        n = self.node
        self.ph_pub = n.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        self.joint_pub = n.create_publisher(JointState, topics.JOINT_STATES, 10)
        self.msg_pub = n.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.commands: list[tuple[float, float]] = []   # (arrival, opening mm)
        self.states: list[tuple[float, str, str, bool, float]] = []  # (arrival, state, reason, active, stamp)
        self.opening_mm = START_OPENING_MM
        n.create_subscription(Float64MultiArray, topics.gripper_command_topic("right"), self._on_command, 10)
        n.create_subscription(DispenserState, topics.DISPENSER_STATE, self._on_state, FSM)
        self.client = ActionClient(n, Dispense, topics.DISPENSE)
        self.rng = random.Random(5)
        self.spinner = Spinner(n)

    def _on_command(self, msg):
        t = time.monotonic()
        self.commands.append((t, msg.data[0] * 1000.0))
        self.opening_mm = msg.data[0] * 1000.0
        self.publish_joints()  # the gripper follows at once

    def _on_state(self, msg):
        self.states.append((time.monotonic(), msg.state, msg.reason, msg.active, stamp_sec(msg.stamp)))

    def publish_joints(self):
        JointState = self.msgs["JointState"]
        self.joint_pub.publish(JointState(header=self._header(), name=["right_gripper"],
                                          position=[self.opening_mm / 1000.0]))

    def _header(self):
        from std_msgs.msg import Header
        return Header(stamp=stamp_msg(time.time()))

    def publish_ph(self, value: float):
        ChemicalReading = self.msgs["ChemicalReading"]
        self.ph_pub.publish(ChemicalReading(header=self._header(), sensor="ph_meter", quantity="pH",
                                            value=value + self.rng.gauss(0.0, PH_NOISE), unit="pH",
                                            self_check_ok=True, noise=PH_NOISE))

    def stream_ph(self, value: float, seconds: float, until=None):
        """Readings every READING_PERIOD_S for `seconds` (or until `until()` holds); whether `until` held."""
        end = time.monotonic() + seconds
        next_t = time.monotonic()
        while time.monotonic() < end:
            if until is not None and until():
                return True
            if time.monotonic() >= next_t:
                self.publish_ph(value)
                next_t += READING_PERIOD_S
            time.sleep(0.002)
        return until() if until is not None else True

    def tell(self, symbol: str, experiment: str):
        AgentMessage = self.msgs["AgentMessage"]
        self.msg_pub.publish(AgentMessage(stamp=stamp_msg(time.time()), experiment_id=experiment,
                                          sender="vision_supervisor", receiver="dispenser_controller",
                                          symbol=symbol, payload_json=json.dumps({"reason": "endpoint"})))

    def ready(self, seconds: float) -> bool:
        return (self.client.wait_for_server(timeout_sec=seconds)
                and wait_until(lambda: self.ph_pub.get_subscription_count() > 0
                               and self.msg_pub.get_subscription_count() > 0, seconds))

    def sample(self, kind: str, experiment: str) -> dict:
        """One goal: start it, let the gripper close, then the crossing reading (kind "ph") or the hold
        message ("hold"); the hold's latency, then cancel the goal."""
        Dispense = self.msgs["Dispense"]
        self.opening_mm = START_OPENING_MM
        for _ in range(3):
            self.publish_joints()
        self.stream_ph(BELOW_PH, 0.5)  # readings of the last sample still queued in the node are taken first
        future = self.client.send_goal_async(Dispense.Goal(
            experiment_id=experiment, subtask_id="titrate", target_volume_ml=0.0, use_target_ph=True,
            target_ph=TARGET_PH, ph_direction=1, rate_mm_s=0.2, timeout_s=120.0))
        if not wait_until(future.done, 10.0) or not future.result().accepted:
            return {"error": "goal not accepted"}
        handle = future.result()
        begun = time.monotonic()
        try:
            # the gripper closes (MOTION) and the dispenser's window fills with readings below the target
            closing = lambda: len([c for c in self.commands if c[0] > begun]) >= 5  # noqa: E731
            self.stream_ph(BELOW_PH, 0.6 + self.rng.uniform(0.0, 0.1))
            if not closing():
                return {"error": "the gripper did not close"}
            if any(s[0] > begun and s[1] != "MOTION" for s in self.states):
                return {"error": "left MOTION before the crossing: " + ", ".join(
                    f"{s[1]} ({s[2]})" for s in self.states if s[0] > begun)}
            sent, wall = time.monotonic(), time.time()
            if kind == "ph":
                self.publish_ph(ACROSS_PH)
            else:
                self.tell("hold", experiment)
            after = ACROSS_PH if kind == "ph" else BELOW_PH
            held = lambda: any(s[0] > sent and s[1] == "WAIT" for s in self.states)  # noqa: E731
            if not self.stream_ph(after, 3.0, until=held):
                return {"error": "no hold within 3 s"}
            self.stream_ph(after, 0.2)  # a few held commands: the hold's opening is the one they repeat
            wait = next(s for s in self.states if s[0] > sent and s[1] == "WAIT")
            # The hold's tick: the WAIT's stamp (the dispenser's wall clock, published right after that tick's
            # gripper command) on this process's monotonic clock. The hold command is the first command to
            # arrive after it with the opening the gripper then keeps: an earlier command of the same value
            # (two ticks in quick succession; the WAIT is stamped a little after
            # its command went out, so 3 ms of slack) or a late one still closing is not the hold.
            tick = wait[4] - (wall - sent)
            cmds = [c for c in self.commands if c[0] > sent]
            hold_mm = cmds[-1][1]
            first = next((c for c in cmds if c[0] >= tick - 3e-3 and abs(c[1] - hold_mm) < 1e-6), None)
            if first is None:
                return {"error": "no hold command after the WAIT's tick"}
            return {"latency_s": first[0] - sent, "state_latency_s": wait[0] - sent, "reason": wait[2],
                    "to_tick_s": tick - sent}
        finally:
            handle.cancel_goal_async()
            ended = lambda: any(s[0] > begun and not s[3] for s in self.states)  # noqa: E731
            self.stream_ph(BELOW_PH, 5.0, until=ended)
            if kind == "hold":
                self.tell("release", experiment)

    def close(self):
        self.spinner.close()
        self.node.destroy_node()


def measure_dispenser(samples: int, tmp: Path, script: str | None = None) -> dict:
    proc = dds_bench.node_process("dispenser_controller_node", {
        "use_sim_time": False, "clock_ack_period_s": 0.0, "side": "right"}, log=node_log(tmp, "dispenser"),
        script=script)
    probe = DispenserProbe()
    out = {"ph_to_hold": [], "hold_message_to_hold": [], "ph_state_s": [], "hold_state_s": [], "ph_tick_s": [],
           "hold_tick_s": [], "errors": [], "reasons": {}}
    try:
        if not probe.ready(60.0):
            out["errors"].append("the dispenser never came up")
            return out
        experiment = f"latency-{uuid.uuid4().hex[:8]}"
        for i in range(2 * samples):
            kind = "ph" if i % 2 == 0 else "hold"
            r = probe.sample(kind, experiment)
            if "error" in r:
                out["errors"].append(f"{kind}: {r['error']}")
                continue
            key = "ph_to_hold" if kind == "ph" else "hold_message_to_hold"
            out[key].append(r["latency_s"])
            out[f"{kind}_state_s"].append(r["state_latency_s"])
            out[f"{kind}_tick_s"].append(r["to_tick_s"])
            out["reasons"][f"{kind}: {r['reason']}"] = out["reasons"].get(f"{kind}: {r['reason']}", 0) + 1
    finally:
        probe.close()
        dds_bench.stop([proc])
    return out


# ------------------------------------------------------------------------------------------------ b. drop -> event
def render_drops(drops: int, chunk_s: float, seed: int):
    """The twin's contact audio with `drops` droplets at known onsets (1.5 s of room first: the detector's
    noise floor settles), as whole chunks; (audio int16, onsets s)."""
    from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth
    rng = random.Random(seed)
    synth = ContactAudioSynth(ContactAudioConfig(seed=seed, snr_db=20.0))
    onsets = [round(1.5 + 0.5 * i + rng.uniform(0.0, 0.1), 5) for i in range(drops)]
    for k, t in enumerate(onsets):
        synth.schedule(AudioEventTruth(time=t, kind="droplet", label=f"drop {k}"))
    n_chunk = int(round(chunk_s * SAMPLE_RATE))
    chunks = math.ceil((onsets[-1] + 1.0) * SAMPLE_RATE / n_chunk)
    return synth.render(0.0, chunks * n_chunk), onsets


def measure_audio(drops: int, chunk_s: float, tmp: Path, seed: int = 11) -> dict:
    import rclpy.node
    from std_msgs.msg import Header

    from agentchemist_interfaces.msg import AudioChunk, AudioEvent, DispenserState
    from agentchemist_ros.common import topics
    from agentchemist_ros.common.qos import AUDIO, FSM, RELIABLE

    audio, onsets = render_drops(drops, chunk_s, seed)
    n_chunk = int(round(chunk_s * SAMPLE_RATE))
    proc = dds_bench.node_process("audio_supervisor_node", {"use_sim_time": False, "clock_ack_period_s": 0.0,
                                                            "sample_rate": SAMPLE_RATE},
                                  log=node_log(tmp, f"audio_{chunk_s}"))
    node = rclpy.node.Node(f"latency_audio_probe_{uuid.uuid4().hex[:6]}")
    pub = node.create_publisher(AudioChunk, topics.audio_topic("right"), AUDIO)
    # The dispenser squeezes (drops expected, one per 0.5 s): the drops are the ones it counts
    state_pub = node.create_publisher(DispenserState, topics.DISPENSER_STATE, FSM)
    events: list[tuple[float, str, float]] = []   # (arrival, kind, onset on the stream's stamps)
    node.create_subscription(AudioEvent, topics.AUDIO_EVENTS,
                             lambda m: events.append((time.monotonic(), m.kind, stamp_sec(m.start))), RELIABLE)
    spinner = Spinner(node)
    out: dict = {"chunk_s": chunk_s, "drops": len(onsets)}
    try:
        if not wait_until(lambda: pub.get_subscription_count() > 0
                          and node.count_publishers(topics.AUDIO_EVENTS) > 0, 60.0):
            out["error"] = "the audio supervisor never came up"
            return out
        state_pub.publish(DispenserState(stamp=stamp_msg(time.time()), experiment_id="latency", subtask_id="s1",
                                         mode="drops", state="MOTION", previous_state="IDLE", reason="goal",
                                         active=True, drop_interval_s=0.5))
        time.sleep(0.5)
        epoch = time.time()                      # stream time 0 on the chunks' stamps
        m0 = time.monotonic() + 0.05             # stream time 0 on this process's clock
        late = []
        cpu0, wall0 = dds_bench.cpu_seconds(proc.pid), time.monotonic()
        for k in range(len(audio) // n_chunk):
            due = m0 + (k + 1) * n_chunk / SAMPLE_RATE  # its last sample has been captured
            time.sleep(max(0.0, due - time.monotonic()))
            late.append(time.monotonic() - due)
            pub.publish(AudioChunk(header=Header(stamp=stamp_msg(epoch + k * n_chunk / SAMPLE_RATE)),
                                   sample_rate=SAMPLE_RATE, channels=1,
                                   data=audio[k * n_chunk:(k + 1) * n_chunk].tolist()))
        cpu1, wall1 = dds_bench.cpu_seconds(proc.pid), time.monotonic()
        time.sleep(1.0)
        latencies, missed = [], 0
        for o in onsets:
            hits = [a for a, kind, start in events if kind == "droplet" and abs(start - (epoch + o)) < 0.03]
            if hits:
                latencies.append(min(hits) - (m0 + o))
            else:
                missed += 1
        out.update({"latency_s": latencies, "missed": missed,
                    "other_events": len(events) - len(latencies),
                    "node_cpu_percent": 100.0 * (cpu1 - cpu0) / (wall1 - wall0),
                    "chunk_send_late": percentiles(late)})
        return out
    finally:
        spinner.close()
        node.destroy_node()
        dds_bench.stop([proc])


# ------------------------------------------------------------------------------------------------ c. frame -> colour
def twin_frames(scenario: Path) -> tuple:
    """Front-camera frames drawn by the twin for the Ca/EDTA scenario: its magenta start, and the same beaker
    past equivalence (EDTA in excess: sapphire blue)."""
    from agentchemist.sim.lab import LabTwin
    from agentchemist.sim.scenario import load_scenario
    sc = load_scenario(scenario)
    blue = sc.model_copy(update={"beaker": sc.beaker.model_copy(update={
        "solution": {**sc.beaker.solution, "disodium_edta": 0.012}})})
    return sc, LabTwin(sc).render_camera("front", 1.0), LabTwin(blue).render_camera("front", 1.0)


def measure_vision(samples: int, tmp: Path, period_s: float = 0.25) -> dict:
    """vision_supervisor with the Ca/EDTA plan (its first subtask is held by the probe's action server, so the
    machine stays where the colour is tracked from the start); frames whose colour flips every frame."""
    import rclpy.node
    from rclpy.action import ActionServer
    from rclpy.task import Future
    from sensor_msgs.msg import Image
    from std_msgs.msg import Header

    from agentchemist.plan.planner import plan_instruction
    from agentchemist_interfaces.action import ExecuteSubtask
    from agentchemist_interfaces.msg import ExperimentPlan, QuantityEstimate
    from agentchemist_ros.common import images, topics
    from agentchemist_ros.common.qos import LATCHED, RELIABLE, SENSOR

    scenario, magenta, blue = twin_frames(REPO / "config" / "scenarios" / "ca_edta.yaml")
    outcome = plan_instruction(scenario.instruction, experiment_id=f"latency-{uuid.uuid4().hex[:8]}")
    plan = outcome.plan
    proc = dds_bench.node_process("vision_supervisor_node", {
        "use_sim_time": False, "clock_ack_period_s": 0.0, "runs_dir": str(tmp / "vision_runs"),
        "require_scene_check": False}, log=node_log(tmp, "vision_supervisor"))
    node = rclpy.node.Node(f"latency_vision_probe_{uuid.uuid4().hex[:6]}")
    plan_pub = node.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
    image_pub = node.create_publisher(Image, topics.camera_topic("front"), SENSOR)
    hues: list[tuple[float, float, float]] = []   # (arrival, hue deg, frame stamp)
    node.create_subscription(QuantityEstimate, topics.QUANTITY, lambda m: hues.append(
        (time.monotonic(), m.value, stamp_sec(m.stamp))) if m.quantity == "colour_hue" else None, RELIABLE)
    never = Future()

    async def hold_subtask(goal_handle):
        await never   # the grasp never ends: the machine stays in its first state
        return ExecuteSubtask.Result()
    server = ActionServer(node, ExecuteSubtask, topics.EXECUTE_SUBTASK, execute_callback=hold_subtask)
    spinner = Spinner(node)
    out: dict = {"latency_s": [], "frames": 0, "hues_deg": {}}
    try:
        if not wait_until(lambda: plan_pub.get_subscription_count() > 0
                          and image_pub.get_subscription_count() > 0, 60.0):
            out["error"] = "the vision supervisor never came up"
            return out
        plan_pub.publish(ExperimentPlan(stamp=stamp_msg(time.time()), experiment_id=plan.experiment_id,
                                        plan_json=plan.model_dump_json()))
        frames = {"magenta": images.to_msg(magenta, "rgb8"), "blue": images.to_msg(blue, "rgb8")}
        warm = time.monotonic() + 60.0
        while not hues and time.monotonic() < warm:  # the plan is running once frames give hues
            msg = frames["magenta"]
            msg.header = Header(stamp=stamp_msg(time.time()), frame_id="front_camera")
            image_pub.publish(msg)
            time.sleep(0.3)
        if not hues:
            out["error"] = "no colour_hue estimate for a frame"
            return out
        time.sleep(0.5)
        rng = random.Random(9)
        for i in range(samples):
            colour = "blue" if i % 2 == 0 else "magenta"
            msg = frames[colour]
            stamp = time.time()
            msg.header = Header(stamp=stamp_msg(stamp), frame_id="front_camera")
            t = time.monotonic()
            image_pub.publish(msg)
            out["frames"] += 1
            if wait_until(lambda: any(abs(h[2] - stamp) < 1e-6 for h in hues), 5.0):
                hit = next(h for h in hues if abs(h[2] - stamp) < 1e-6)
                out["latency_s"].append(hit[0] - t)
                out["hues_deg"].setdefault(colour, []).append(round(hit[1], 1))
            time.sleep(period_s * rng.uniform(0.5, 1.5))
        out["hues_deg"] = {k: [min(v), max(v)] for k, v in out["hues_deg"].items()}
        return out
    finally:
        never.set_result(None)
        spinner.close()
        server.destroy()
        node.destroy_node()
        dds_bench.stop([proc])


# ------------------------------------------------------------------------------------------------ d. record -> durable
def measure_recorder(samples: int, tmp: Path) -> dict:
    import rclpy.node

    from agentchemist_interfaces.msg import Anomaly, ExperimentPlan, RecorderStatus
    from agentchemist_ros.common import topics
    from agentchemist_ros.common.qos import LATCHED, RELIABLE

    runs = tmp / "runs"
    proc = dds_bench.node_process("recorder_node", {"use_sim_time": False, "clock_ack_period_s": 0.0,
                                                    "runs_dir": str(runs)}, log=node_log(tmp, "recorder"))
    node = rclpy.node.Node(f"latency_record_probe_{uuid.uuid4().hex[:6]}")
    experiment = f"latency-{uuid.uuid4().hex[:8]}"
    plan_pub = node.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
    anomaly_pub = node.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
    statuses: list[tuple[float, float]] = []   # (arrival, stored_through) for our experiment
    node.create_subscription(RecorderStatus, topics.RECORDER_STATUS, lambda m: statuses.append(
        (time.monotonic(), stamp_sec(m.stored_through))) if m.experiment_id == experiment and m.recording else None,
        LATCHED)
    spinner = Spinner(node)
    out: dict = {"to_row_s": [], "to_ack_s": []}
    rng = random.Random(3)
    try:
        if not wait_until(lambda: plan_pub.get_subscription_count() > 0
                          and anomaly_pub.get_subscription_count() > 0, 60.0):
            out["error"] = "the recorder never came up"
            return out
        plan_pub.publish(ExperimentPlan(stamp=stamp_msg(time.time()), experiment_id=experiment, plan_json="{}"))
        db = runs / experiment / "records.db"
        if not wait_until(lambda: statuses and db.exists(), 30.0):
            out["error"] = "the recorder never acknowledged the plan"
            return out
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
        sent = []   # (monotonic, wall stamp)
        for i in range(samples):
            time.sleep(rng.uniform(0.05, 0.25))  # sends at every phase of the recorder's writer and status
            text = f"latency probe {experiment} {i}"
            stamp = time.time()
            t = time.monotonic()
            anomaly_pub.publish(Anomaly(stamp=stamp_msg(stamp), experiment_id=experiment, source="latency_probe",
                                        kind="latency_probe", severity="info", description=text))
            found = wait_until(lambda: conn.execute("SELECT 1 FROM anomalies WHERE description = ?",
                                                    (text,)).fetchone() is not None, 10.0, step=0.0005)
            if not found:
                out.setdefault("errors", []).append(f"row {i} not committed within 10 s")
                continue
            out["to_row_s"].append(time.monotonic() - t)
            sent.append((t, stamp))
        wait_until(lambda: statuses and statuses[-1][1] >= sent[-1][1], 5.0) if sent else None
        for t, stamp in sent:
            acks = [a for a, through in statuses if through >= stamp and a >= t]
            if acks:
                out["to_ack_s"].append(min(acks) - t)
        conn.close()
        return out
    finally:
        spinner.close()
        node.destroy_node()
        dds_bench.stop([proc])


# ------------------------------------------------------------------------------------------------ conditions
def condition(with_hog: bool, run, seconds_hint: float) -> dict:
    """run() quiet or beside a CPU hog per core; the load average before it is kept with its result."""
    load = os.getloadavg()[0]
    hogs = dds_bench.cpu_hogs(seconds_hint + 120) if with_hog else []
    try:
        result = run()
    finally:
        dds_bench.stop(hogs, signal=9)
    return {"load_1min_before": load, "cpu_hog_processes": len(hogs), **result}


def summarise(values: list[float], goal_ms: float | None = None) -> dict:
    """Percentiles, the share within 10 ms (a timer-bound path shows as a spread over its period, an
    event-driven one as a mass near zero however loaded the machine) and every sample (ms)."""
    out = percentiles(values, within_s=0.01)
    out["samples_ms"] = [round(1e3 * v, 2) for v in sorted(values)]
    if goal_ms is not None and out["n"]:
        out["goal_p99_ms"] = goal_ms
        out["meets_goal"] = out["p99_ms"] <= goal_ms
    return out


def choose_chunk(audio: dict) -> dict:
    """The largest chunk whose p99 meets the goal in both conditions (the least CPU per second of audio);
    none meeting it: the one with the lowest p99 under the hog."""
    goal = GOALS_MS["drop_to_audio_event"]
    ok = [c for c, r in audio.items()
          if all(r.get(k, {}).get("latency", {}).get("p99_ms", math.inf) <= goal for k in ("quiet", "cpu_hog"))]
    if ok:
        best = max(ok, key=float)
        return {"chunk_s": float(best), "why": f"the largest chunk whose p99 meets {goal:g} ms quiet and under the "
                                               "CPU hog (larger chunks cost the node less CPU)"}
    best = min(audio, key=lambda c: audio[c].get("cpu_hog", audio[c].get("quiet", {})).get(
        "latency", {}).get("p99_ms", math.inf))
    other = max(audio, key=float) if float(best) == min(map(float, audio)) else min(audio, key=float)

    def p50_cpu(c):
        q = audio[c].get("quiet", {})
        return f"{q.get('latency', {}).get('p50_ms', math.nan):.0f} ms p50 quiet at {q.get('node_cpu_percent', math.nan):.0f} %"
    return {"chunk_s": float(best), "why": (
        f"no chunk size meets {goal:g} ms at p99 (the detector reports a drop when its ring has ended, "
        f"perception/audio/detector.py): {float(best) * 1e3:g} ms has the lowest p99 under the CPU hog; "
        f"{p50_cpu(best)} of a core vs {p50_cpu(other)} with {float(other) * 1e3:g} ms chunks")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=60, help="samples per measurement and condition")
    parser.add_argument("--chunks", type=float, nargs="+", default=list(CHUNKS_S), help="audio chunk sizes (s)")
    parser.add_argument("--only", nargs="+", choices=("a", "b", "c", "d"), default=["a", "b", "c", "d"])
    parser.add_argument("--quick", action="store_true", help="3 samples each, one chunk size, quiet only")
    parser.add_argument("--no-hog", action="store_true", help="skip the CPU-hog condition")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "latency.json"))
    parser.add_argument("--dispenser-node", metavar="FILE",
                        help="run this dispenser_controller_node.py instead of the installed one (an A/B of two "
                             "versions: give --out another file)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other measurements already in --out (each keeps its own machine entry)")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.chunks, args.no_hog = 3, [0.05], True
    conditions = {"quiet": False} if args.no_hog else {"quiet": False, "cpu_hog": True}

    import rclpy
    rclpy.init()
    tmp = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    result = {"machine": dds_bench.machine(), "clock": "wall-clock ROS time in every node (use_sim_time false, "
              "no /clock); latencies on the probe's time.monotonic", "samples": args.samples, "node_logs": str(tmp)}
    try:
        if "a" in args.only:
            ph, hold = {}, {}
            for name, hog in conditions.items():
                r = condition(hog, lambda: measure_dispenser(args.samples, tmp, args.dispenser_node), 4 * args.samples)
                common = {"load_1min_before": r["load_1min_before"], "cpu_hog_processes": r["cpu_hog_processes"],
                          "dispenser_node": args.dispenser_node or "installed",
                          "errors": r["errors"], "wait_reasons": r["reasons"]}
                ph[name] = {**common, "latency": summarise(r["ph_to_hold"], GOALS_MS["ph_to_hold"]),
                            "to_hold_tick": summarise(r["ph_tick_s"]),
                            "to_dispenser_state": summarise(r["ph_state_s"])}
                hold[name] = {**common, "latency": summarise(r["hold_message_to_hold"],
                                                             GOALS_MS["hold_message_to_hold"]),
                              "to_hold_tick": summarise(r["hold_tick_s"]),
                              "to_dispenser_state": summarise(r["hold_state_s"])}
                print(f"a {name}: pH->hold {fmt(ph[name]['latency'])}; hold msg->hold {fmt(hold[name]['latency'])}"
                      f"; errors {len(r['errors'])}", flush=True)
            result["ph_to_hold"] = {"goal_p99_ms": GOALS_MS["ph_to_hold"], **ph}
            result["hold_message_to_hold"] = {"goal_p99_ms": GOALS_MS["hold_message_to_hold"], **hold}
        if "b" in args.only:
            audio = {}
            for chunk in args.chunks:
                audio[str(chunk)] = {}
                for name, hog in conditions.items():
                    r = condition(hog, lambda c=chunk: measure_audio(args.samples, c, tmp), 0.6 * args.samples + 30)
                    r["latency"] = summarise(r.pop("latency_s", []), GOALS_MS["drop_to_audio_event"])
                    audio[str(chunk)][name] = r
                    print(f"b chunk {chunk * 1e3:g} ms {name}: {fmt(r['latency'])}; missed {r.get('missed')}; "
                          f"node CPU {r.get('node_cpu_percent', float('nan')):.1f} %", flush=True)
            result["drop_to_audio_event"] = {"goal_p99_ms": GOALS_MS["drop_to_audio_event"], "by_chunk_s": audio,
                                             "choice": choose_chunk(audio)}
        if "c" in args.only:
            vision = {}
            for name, hog in conditions.items():
                r = condition(hog, lambda: measure_vision(args.samples, tmp), 0.3 * args.samples + 60)
                r["latency"] = summarise(r.pop("latency_s"))
                vision[name] = r
                print(f"c {name}: frame->colour {fmt(r['latency'])} of {r['frames']} frames; hues {r['hues_deg']}",
                      flush=True)
            result["frame_to_colour"] = vision
        if "d" in args.only:
            rec = {}
            for name, hog in conditions.items():
                r = condition(hog, lambda: measure_recorder(args.samples, tmp), 0.3 * args.samples + 30)
                r["to_row"] = summarise(r.pop("to_row_s"))
                r["to_acknowledgement"] = summarise(r.pop("to_ack_s"))
                rec[name] = r
                print(f"d {name}: published->row {fmt(r['to_row'])}; ->acknowledged {fmt(r['to_acknowledgement'])}",
                      flush=True)
            result["record_to_durable"] = rec
    finally:
        rclpy.try_shutdown()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.merge and out.exists():
        kept = json.loads(out.read_text())
        for key in MEASUREMENTS:
            if key in result:
                result[key]["machine"] = result["machine"]  # measured at this commit, at this load
            elif key in kept:
                result[key] = kept[key]
                result[key].setdefault("machine", kept["machine"])
        for key, value in kept.items():  # the A/B records other runs merged in stay too
            result.setdefault(key, value)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def fmt(p: dict) -> str:
    if not p.get("n"):
        return "no samples"
    return f"p50/p99/max {p['p50_ms']:.1f}/{p['p99_ms']:.1f}/{p['max_ms']:.1f} ms (n {p['n']})"


if __name__ == "__main__":
    sys.exit(main())
