"""status_overlay: FSM state, pH and titrant volume as a text marker for rviz (/agentchemist/status_overlay).

Subscribes the FSM state (latched), the pH meter's readings and the titrant volume estimates; publishes
one visualization_msgs/Marker (TEXT_VIEW_FACING, latched) at rate_hz of wall time. The text is
agentchemist.viz.status_text's; started by every launch file with rviz:=true.
"""
import threading

from agentchemist_ros.common.guarded import GuardedNode
from std_msgs.msg import Header
from visualization_msgs.msg import Marker

from agentchemist.viz.overlay_config import StatusOverlayConfig
from agentchemist.viz.status_text import StatusText
from agentchemist_interfaces.msg import ChemicalReading, FsmState, QuantityEstimate
from agentchemist_ros.common import topics
from agentchemist_ros.common.params import declare_config
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE
from agentchemist_ros.common.runner import spin_node


class StatusOverlayNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("status_overlay", **kwargs)
        self.config = cfg = declare_config(self, StatusOverlayConfig)
        self.lock = threading.Lock()
        self.status = StatusText()
        self.pub = self.create_publisher(Marker, topics.STATUS_OVERLAY, LATCHED)
        self.create_subscription(FsmState, topics.FSM_STATE, self.on_state, FSM)
        self.create_subscription(ChemicalReading, topics.PH_READING, self.on_reading, READINGS)
        self.create_subscription(QuantityEstimate, topics.QUANTITY, self.on_quantity, RELIABLE)
        self.timer = self.create_timer(1.0 / cfg.rate_hz, self.publish)

    def on_state(self, msg):
        with self.lock:
            self.status.on_state(msg.state)

    def on_reading(self, msg):
        with self.lock:
            self.status.on_reading(msg.quantity, msg.value)

    def on_quantity(self, msg):
        with self.lock:
            self.status.on_quantity(msg.quantity, msg.channel, msg.value)

    def publish(self):
        cfg = self.config
        with self.lock:
            text = self.status.text()
        msg = Marker(header=Header(stamp=self.get_clock().now().to_msg(), frame_id=cfg.frame), ns="status", id=0,
                     type=Marker.TEXT_VIEW_FACING, action=Marker.ADD, text=text)
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = cfg.x, cfg.y, cfg.z
        msg.pose.orientation.w = 1.0
        msg.scale.z = cfg.height
        msg.color.r = msg.color.g = msg.color.b = msg.color.a = 1.0
        self.pub.publish(msg)


def main(args=None):
    spin_node(StatusOverlayNode, args)


if __name__ == "__main__":
    main()
