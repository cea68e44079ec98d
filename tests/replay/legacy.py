"""Bags recorded before the dispenser published its own state: the drop expectation travelled as the
vision supervisor's AgentMessages to the audio supervisor (`expect_drops` with the interval and a
priming flag when the dispenser entered MOTION, `stop_expecting` with reason "dispenser <STATE>" on other
states, and with no reason when the goal's result came). `DispenserStateFromMessages` republishes each of
them as the DispenserState the dispenser now sends, with the recorded values, so that the audio
supervisor is replayed against exactly what it was told live."""
from __future__ import annotations

import json

from rclpy.node import Node

from agentchemist_interfaces.msg import AgentMessage, DispenserState
from agentchemist_ros.common import topics
from agentchemist_ros.common.qos import FSM, RELIABLE


def dispenser_state(msg: AgentMessage) -> DispenserState | None:
    """The DispenserState equivalent of a recorded expect_drops / stop_expecting message (else None)."""
    if msg.receiver != "audio_supervisor" or msg.symbol not in ("expect_drops", "stop_expecting"):
        return None
    payload = json.loads(msg.payload_json or "{}")
    mode = "calibration" if msg.subtask_id == "calibration" else "drops"
    out = DispenserState(stamp=msg.stamp, experiment_id=msg.experiment_id, subtask_id=msg.subtask_id, mode=mode)
    if msg.symbol == "expect_drops":
        out.state, out.active = "MOTION", True
        out.drop_interval_s = float(payload.get("expected_interval_s") or 0.0)
        out.priming = bool(payload.get("priming", False))
    elif str(payload.get("reason", "")).startswith("dispenser "):
        out.state, out.active = str(payload["reason"]).split(" ", 1)[1], True
    else:
        out.state, out.active = "IDLE", False
    return out


class DispenserStateFromMessages(Node):
    def __init__(self):
        super().__init__("legacy_dispenser_state", start_parameter_services=False)
        self.pub = self.create_publisher(DispenserState, topics.DISPENSER_STATE, FSM)
        self.create_subscription(AgentMessage, topics.MESSAGES, self.on_message, RELIABLE)

    def on_message(self, msg):
        state = dispenser_state(msg)
        if state is not None:
            self.pub.publish(state)
