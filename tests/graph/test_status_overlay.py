"""status_overlay on the graph: the FSM state, a pH reading and a volume estimate become one latched text
marker for rviz."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from visualization_msgs.msg import Marker  # noqa: E402

from agentchemist_interfaces.msg import ChemicalReading, FsmState, QuantityEstimate  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.status_overlay_node import StatusOverlayNode  # noqa: E402


def test_overlay_text_follows_state_ph_and_volume():
    rclpy.init()
    try:
        overlay = StatusOverlayNode()
        probe = Node("overlay_probe")
        texts = []
        probe.create_subscription(Marker, topics.STATUS_OVERLAY, lambda m: texts.append(m), LATCHED)
        state = probe.create_publisher(FsmState, topics.FSM_STATE, FSM)
        ph = probe.create_publisher(ChemicalReading, topics.PH_READING, READINGS)
        qty = probe.create_publisher(QuantityEstimate, topics.QUANTITY, RELIABLE)
        executor = make_executor()
        executor.add_node(overlay)
        executor.add_node(probe)
        state.publish(FsmState(state="DISPENSING"))
        ph.publish(ChemicalReading(sensor="ph_meter", quantity="pH", value=7.25, unit="pH"))
        qty.publish(QuantityEstimate(quantity="titrant_volume", unit="mL", channel="statistical", value=12.5))
        want = "FSM: DISPENSING\npH: 7.25\ntitrant: 12.50 mL statistical"
        end = time.monotonic() + 20.0
        while time.monotonic() < end and not (texts and texts[-1].text == want):
            executor.spin_once(timeout_sec=0.05)
        assert texts and texts[-1].text == want, texts[-1].text if texts else None
        marker = texts[-1]
        assert marker.type == Marker.TEXT_VIEW_FACING and marker.header.frame_id == "base_link"
        for n in (overlay, probe):
            n.destroy_node()
    finally:
        rclpy.try_shutdown()
