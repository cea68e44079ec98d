"""audio_supervisor: hears every drop in the gripper's contact microphone.

Chunks -> agentchemist.perception.audio.StreamingDetector -> events; DropContext decides expected /
anomalous / timeout from what the vision supervisor says is being dispensed. Publishes AudioEvent,
audio-channel QuantityEstimate, the `drop` symbol and anomalies.
"""
import json
import threading

import numpy as np
from rclpy.node import Node

from agentchemist.perception.audio import DetectorConfig, StreamingDetector
from agentchemist.perception.audio.context import ContextConfig, DropContext
from agentchemist_interfaces.msg import AgentMessage, Anomaly, AudioChunk, AudioEvent, FsmState, QuantityEstimate
from agentchemist_ros.common import topics
from agentchemist_ros.common.anomaly import make_anomaly
from agentchemist_ros.common.calibration import declare_calibration
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import AUDIO, FSM, RELIABLE
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg, to_sec


class AudioSupervisorNode(Node):
    def __init__(self, **kwargs):
        super().__init__("audio_supervisor", **kwargs)
        self.sides = list(declare(self, "sides", ["right"], "Gripper microphones to listen to (left, right)"))
        _k, drop_ml, _residual, drop_sd, _source = declare_calibration(self)
        self.sample_rate = declare(self, "sample_rate", 48000, "Expected sample rate (Hz)", low=8000, high=192000)
        self.detectors = {s: StreamingDetector(DetectorConfig(sample_rate=self.sample_rate)) for s in self.sides}
        self.drop_context = DropContext(ContextConfig(drop_volume_ml=drop_ml, drop_volume_sd_ml=drop_sd))
        self.lock = threading.Lock()
        self.experiment_id = ""
        self.fsm_state = ""
        self.subtask_id = ""
        self.event_pub = self.create_publisher(AudioEvent, topics.AUDIO_EVENTS, RELIABLE)
        self.qty_pub = self.create_publisher(QuantityEstimate, topics.QUANTITY, RELIABLE)
        self.msg_pub = self.create_publisher(AgentMessage, topics.MESSAGES, RELIABLE)
        self.anomaly_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)
        for side in self.sides:
            self.create_subscription(AudioChunk, topics.audio_topic(side), lambda m, s=side: self.on_chunk(s, m), AUDIO)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_fsm, FSM)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)
        self.create_timer(0.25, self.check_timeout)

    def on_fsm(self, msg):
        with self.lock:
            self.experiment_id, self.fsm_state = msg.experiment_id, msg.state

    def on_message(self, msg):
        """The vision supervisor tells us when drops are expected and how often (from the dispenser rate)."""
        if msg.receiver != self.get_name() or msg.symbol not in ("expect_drops", "stop_expecting"):
            return
        payload = json.loads(msg.payload_json or "{}")
        with self.lock:
            self.experiment_id = msg.experiment_id or self.experiment_id
            self.subtask_id = msg.subtask_id
            self.drop_context.set_expectation(active=msg.symbol == "expect_drops", subtask_id=msg.subtask_id,
                                         fsm_state=self.fsm_state,
                                         expected_interval_s=payload.get("expected_interval_s"),
                                         now=node_now(self))

    def on_chunk(self, side, msg):
        t0 = to_sec(msg.header.stamp)
        samples = np.frombuffer(memoryview(msg.data), dtype=np.int16) if len(msg.data) else np.zeros(0, np.int16)
        detector = self.detectors[side]
        problems = detector.validate_chunk(samples, msg.sample_rate, msg.channels, t0)
        for problem in problems:
            self.report("bad_audio", "warn", f"{side} microphone: {problem}")
        if msg.sample_rate != self.sample_rate or msg.channels != 1:
            return  # never detect on audio we cannot interpret: no phantom drops
        events = detector.process(samples, t0, sample_rate=msg.sample_rate, channels=msg.channels)
        for event in events:
            self.publish_event(side, event)

    def publish_event(self, side, event):
        with self.lock:
            classified = self.drop_context.classify(event)
            exp, state, subtask = self.experiment_id, self.fsm_state, self.subtask_id
        self.event_pub.publish(AudioEvent(
            stamp=to_msg(event.end), experiment_id=exp, event_id=event.event_id, kind=event.kind,
            classification=classified.classification, start=to_msg(event.start), end=to_msg(event.end),
            snr_db=float(event.snr_db), peak_frequency_hz=float(event.peak_frequency_hz),
            quantity=float(classified.quantity_ml), confidence=float(classified.confidence),
            symbol=classified.symbol, source=f"{side}_gripper"))
        if classified.classification == "expected" and classified.symbol == "drop":
            self.qty_pub.publish(QuantityEstimate(
                stamp=to_msg(event.onset), experiment_id=exp, quantity="titrant_volume", unit="mL", channel="audio",
                value=float(classified.total_ml), delta=float(classified.quantity_ml),
                confidence=float(classified.confidence), fsm_state=state, subtask_id=subtask,
                event_id=event.event_id))
            self.msg_pub.publish(AgentMessage(stamp=to_msg(event.onset), experiment_id=exp, sender=self.get_name(),
                                              receiver="vision_supervisor", subtask_id=subtask, symbol="drop",
                                              payload_json=f'{{"event_id": "{event.event_id}", '
                                                           f'"total_ml": {classified.total_ml}}}'))
        elif classified.classification == "anomalous" and event.kind == "droplet":
            # A drop nobody dispensed is an anomaly. Other unexpected sounds (the arm's own motors, a bump)
            # stay in the audio event log as anomalous but raise no alarm: they change no quantity.
            self.report("unexpected_drop", "warn", f"droplet heard at {event.onset:.3f} s: {classified.reason}")

    def check_timeout(self):
        with self.lock:
            timeout = self.drop_context.check_timeout(node_now(self))
        if timeout is not None:
            self.report("drop_timeout", "warn", timeout.reason)

    def report(self, kind, severity, description):
        self.anomaly_pub.publish(make_anomaly(now=node_now(self), experiment_id=self.experiment_id,
                                              source=self.get_name(), kind=kind, severity=severity,
                                              description=description, fsm_state=self.fsm_state,
                                              subtask_id=self.subtask_id))


def main(args=None):
    spin_node(AudioSupervisorNode, args)


if __name__ == "__main__":
    main()
