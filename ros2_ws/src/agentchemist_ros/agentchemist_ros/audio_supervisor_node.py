"""audio_supervisor: hears every drop in the gripper's contact microphone.

Chunks -> agentchemist.perception.audio.StreamingDetector -> events; DropContext decides expected /
anomalous / timeout from the dispenser's own state (DispenserState: squeezing, at what drop interval,
whether the next drop primes the pipette again, whether its goal is still running). Publishes AudioEvent,
audio-channel QuantityEstimate, the `drop` symbol and anomalies.

Noise that deafens a microphone (agentchemist.perception.audio.NoiseMonitor) is an `audio_noise`
anomaly (warn, response adjustment) stamped when it began, and a resolved one (info) stamped when it
ended: the vision supervisor holds dispensing in between and the recorder gates the audio channel over
that window. Droplets heard inside it count nothing and raise nothing (the statistical channel carries
the volume), and no drop timeout runs while no drop can be heard.

A sound other than a droplet heard while the microphone's own gripper moves (from /joint_states) is that
gripper's motor: expected, not an anomalous sound (perception/audio/own_motion.py).
"""
import threading

import numpy as np
from agentchemist_ros.common.guarded import GuardedNode
from sensor_msgs.msg import JointState

from agentchemist.contracts import AnomalyKind, Severity, Symbol
from agentchemist.contracts.notes import Drop
from agentchemist.perception.audio import DetectorConfig, NoiseConfig, NoiseMonitor, StreamingDetector
from agentchemist.perception.audio.context import ContextConfig, DropContext
from agentchemist.perception.audio.own_motion import GripperMotion
from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioChunk, AudioEvent, DispenserState, FsmState,
                                         QuantityEstimate)
from agentchemist_ros.common.clock_acks import InputProgress, acknowledge_clock
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.calibration import declare_calibration
from agentchemist_ros.common.codec import encode_note
from agentchemist_ros.common.params import declare, declare_config
from agentchemist_ros.common.qos import AUDIO, FSM, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec


class AudioSupervisorNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("audio_supervisor", **kwargs)
        self.audio_read = InputProgress()  # its clock acknowledges how far it has listened
        self.clock_ack = acknowledge_clock(self, self.audio_read)  # in its own process: the twin keeps within reach
        self.sides = list(declare(self, "sides", ["right"], "Gripper microphones to listen to (left, right)"))
        self.pouring = False    # the dispenser pours solid (DispenserState mode solid_pour, active)
        _k, drop_ml, _residual, drop_sd, _source = declare_calibration(self)
        self.sample_rate = declare(self, "sample_rate", 48000, "Expected sample rate (Hz)", low=8000, high=192000)
        self.detectors = {s: StreamingDetector(DetectorConfig(sample_rate=self.sample_rate)) for s in self.sides}
        self.drop_context = DropContext(ContextConfig(drop_volume_ml=drop_ml, drop_volume_sd_ml=drop_sd))
        self.noise_config = declare_config(self, NoiseConfig, prefix="noise_")
        self.noise = {s: NoiseMonitor(self.noise_config) for s in self.sides}
        # The gripper each microphone sits in: its own motor's sounds while it moves are the robot's.
        speed = declare(self, "own_motion_min_speed_mm_s", 1.0,
                        "A gripper moving at least this fast (mm/s, from /joint_states) makes its microphone's "
                        "non-droplet sounds its own motor's, expected", low=0.0, high=100.0)
        margin = declare(self, "own_motion_margin_s", 0.3,
                         "Seconds before and after a gripper motion still counted as it (joint states come at "
                         "about 10 Hz)", low=0.0, high=5.0)
        self.motion = {s: GripperMotion(speed / 1000.0, margin) for s in self.sides}
        self.lock = threading.Lock()
        self.experiment_id = ""
        self.context_experiment = ""  # the experiment the drop context counts for
        self.fsm_state = ""
        self.subtask_id = ""
        self.dispensing_subtask = ""  # a dispensing subtask is under way (the pipette hangs over the vessel)
        self.event_pub = self.create_publisher(AudioEvent, topics.AUDIO_EVENTS, RELIABLE)
        self.qty_pub = self.create_publisher(QuantityEstimate, topics.QUANTITY, RELIABLE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        for side in self.sides:
            self.create_subscription(AudioChunk, topics.audio_topic(side), lambda m, s=side: self.on_chunk(s, m), AUDIO)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, FSM)
        self.create_subscription(JointState, topics.JOINT_STATES, self.on_joints, 10)
        self.create_subscription(DispenserState, topics.DISPENSER_STATE, self.on_dispenser, FSM)
        self.create_timer(0.25, self.check_timeout)

    def on_fsm(self, msg):
        with self.lock:
            self.experiment_id, self.fsm_state = msg.experiment_id, msg.state

    def on_joints(self, msg):
        positions = dict(zip(msg.name, msg.position))
        t = to_sec(msg.header.stamp)
        with self.lock:
            for side, motion in self.motion.items():
                if f"{side}_gripper" in positions:
                    motion.update(t, float(positions[f"{side}_gripper"]))

    def on_dispenser(self, msg):
        """Drops are expected while the dispenser squeezes (MOTION), about one per its drop interval; not
        while it waits for the pH to settle (WAIT), retracts (RESET) or pours solid."""
        squeezing = msg.active and msg.state == "MOTION" and msg.mode in ("drops", "calibration")
        # A solid pour is a broadband sound on the pouring gripper's microphone (left, with both listened to).
        self.pouring = msg.active and msg.mode == "solid_pour"
        for detector in self.detectors.values():
            detector.drops_expected = squeezing  # a droplet is told as it rings, not after (see the detector)
        with self.lock:
            self.experiment_id = msg.experiment_id or self.experiment_id
            if msg.experiment_id and msg.experiment_id != self.context_experiment:
                # A new experiment counts its own drops from zero, and its first drop primes a fresh
                # pipette, even when its subtask ids repeat the last experiment's (runs back to back).
                old = self.drop_context
                self.drop_context = DropContext(old.config)
                self.drop_context.drop_volume_ml, self.drop_context.drop_volume_sd_ml = (
                    old.drop_volume_ml, old.drop_volume_sd_ml)
                self.context_experiment = msg.experiment_id
            self.subtask_id = msg.subtask_id
            # A goal that runs holds the pipette over the vessel; its end (active false) ends dispensing.
            self.dispensing_subtask = msg.subtask_id if msg.active else ""
            self.drop_context.set_expectation(active=squeezing, subtask_id=msg.subtask_id, fsm_state=self.fsm_state,
                                              expected_interval_s=msg.drop_interval_s if squeezing else None,
                                              now=node_now(self),
                                              priming=msg.priming, ended=not msg.active)

    def on_chunk(self, side, msg):
        t0 = to_sec(msg.header.stamp)
        self.audio_read.read(t0)
        samples = np.frombuffer(memoryview(msg.data), dtype=np.int16) if len(msg.data) else np.zeros(0, np.int16)
        detector = self.detectors[side]
        problems = detector.validate_chunk(samples, msg.sample_rate, msg.channels, t0)
        for problem in problems:
            self.report(AnomalyKind.BAD_AUDIO, Severity.WARN, f"{side} microphone: {problem}")
        if msg.sample_rate != self.sample_rate or msg.channels != 1:
            return  # never detect on audio we cannot interpret: no phantom drops
        events = detector.process(samples, t0, sample_rate=msg.sample_rate, channels=msg.channels)
        monitor = self.noise[side]
        changes = []
        for event in events:
            changes += monitor.on_event(event)
        changes += monitor.update(t0 + len(samples) / msg.sample_rate,
                                  detector.ongoing(self.noise_config.min_duration_s), detector.noise_floor_db)
        for change, episode in changes:
            self.on_noise(side, change, episode)
        for event in events:
            self.publish_event(side, event)

    def on_noise(self, side, change, episode):
        if change == "start" and self.pouring:
            self.report(AnomalyKind.AUDIO_NOISE, Severity.INFO,
                        f"broadband noise on the {side} contact microphone from "
                        f"{episode.start:.2f} s during the solid pour: the pour itself; the audio channel is gated",
                        response="none", stamp=episode.start)
        elif change == "start":
            self.report(AnomalyKind.AUDIO_NOISE, Severity.WARN,
                        f"broadband noise on the {side} contact microphone from {episode.start:.2f} s "
                        f"({episode.level_db:.0f} dB over the floor, spectral flatness {episode.flatness:.2f}): "
                        f"drops cannot be heard; the audio channel is gated and dispensing held until it ends",
                        response="adjustment", stamp=episode.start)
        else:
            with self.lock:
                self.drop_context.restart_timeout(node_now(self))
            self.report(AnomalyKind.AUDIO_NOISE, Severity.INFO,
                        f"the {side} contact microphone hears again at {episode.end:.2f} s (noise for "
                        f"{episode.duration_s:.1f} s)", response="adjustment", stamp=episode.end, resolved=True)

    def publish_event(self, side, event):
        if event.kind == "droplet" and self.noise[side].covers(event.onset):
            # Heard through the noise: maybe a drop, maybe a fragment of the noise. The audio channel is
            # gated over this window; the statistical channel counts what was squeezed.
            with self.lock:
                exp = self.experiment_id
            self.event_pub.publish(AudioEvent(
                stamp=to_msg(event.end), experiment_id=exp, event_id=event.event_id, kind=event.kind,
                classification="anomalous", start=to_msg(event.start), end=to_msg(event.end),
                snr_db=float(event.snr_db), peak_frequency_hz=float(event.peak_frequency_hz), quantity=0.0,
                confidence=float(event.confidence), symbol="", source=f"{side}_gripper"))
            return
        with self.lock:
            classified = self.drop_context.classify(event, own_motion=self.motion[side].covers(event.onset))
            exp, state, subtask = self.experiment_id, self.fsm_state, self.subtask_id
            counted = (classified.classification == "anomalous" and event.kind == "droplet"
                       and bool(self.dispensing_subtask))
            if counted:
                classified = self.drop_context.count_unbidden(classified)
        self.event_pub.publish(AudioEvent(
            stamp=to_msg(event.end), experiment_id=exp, event_id=event.event_id, kind=event.kind,
            classification=classified.classification, start=to_msg(event.start), end=to_msg(event.end),
            snr_db=float(event.snr_db), peak_frequency_hz=float(event.peak_frequency_hz),
            quantity=float(classified.quantity_ml), confidence=float(classified.confidence),
            symbol=classified.symbol, source=f"{side}_gripper"))
        if classified.quantity_ml > 0.0:
            self.qty_pub.publish(QuantityEstimate(
                stamp=to_msg(event.onset), experiment_id=exp, quantity="titrant_volume", unit="mL", channel="audio",
                value=float(classified.total_ml), delta=float(classified.quantity_ml),
                confidence=float(classified.confidence), fsm_state=state, subtask_id=subtask,
                event_id=event.event_id))
        if classified.classification == "expected" and classified.symbol == Symbol.DROP:
            drop = Drop(event_id=event.event_id, total_ml=classified.total_ml)
            self.msg_pub.publish(AgentMessage(stamp=to_msg(event.onset), experiment_id=exp, sender=self.get_name(),
                                              receiver="vision_supervisor", subtask_id=subtask, symbol=drop.SYMBOL,
                                              payload_json=encode_note(drop)))
        elif classified.classification == "anomalous" and event.kind == "droplet":
            # A drop nobody dispensed is an anomaly (counted in the volume while the pipette hangs over
            # the vessel: it is titrant all the same). Other unexpected sounds (the arm's own motors, a
            # bump) stay in the audio event log as anomalous but raise no alarm: they change no quantity.
            self.report(AnomalyKind.UNEXPECTED_DROP, Severity.WARN,
                        f"droplet heard at {event.onset:.3f} s: {classified.reason}",
                        response="adjustment" if counted else "")

    def check_timeout(self):
        if any(m.noisy for m in self.noise.values()):
            return  # deaf: silence says nothing (the window starts again when the noise ends)
        with self.lock:  # silence is judged on the audio heard so far, not on a clock it may lag behind
            timeout = self.drop_context.check_timeout(self.audio_read.reached(node_now(self)))
        if timeout is not None:
            self.report(AnomalyKind.DROP_TIMEOUT, Severity.WARN, timeout.reason)

    def report(self, kind, severity, description, response="", stamp=None, resolved=False):
        self.anomaly_pub.publish(make_anomaly(now=node_now(self) if stamp is None else stamp,
                                              experiment_id=self.experiment_id,
                                              source=self.get_name(), kind=kind, severity=severity,
                                              description=description, fsm_state=self.fsm_state,
                                              subtask_id=self.subtask_id, response=response, resolved=resolved))


def main(args=None):
    spin_node(AudioSupervisorNode, args)


if __name__ == "__main__":
    main()
