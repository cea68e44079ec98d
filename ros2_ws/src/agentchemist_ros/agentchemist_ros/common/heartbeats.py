"""Heartbeats of nodes in their own process (agentchemist_interfaces/Heartbeat on /agentchemist/heartbeats).

`spin_node` (common/runner.py: every node's main on the robot, in launch files and in the cross-process
tests) starts one per node, from a timer on the node's ROS clock; the one-process graph does not (its
nodes share one executor and cannot die apart). The watchers decide in the core
(agentchemist.fsm.node_watch): the supervisor on the agents a run depends on, the dispenser on the
supervisor. The instance id changes with the process, so a restart is told apart from a stall.
"""
import uuid

from agentchemist.fsm.node_watch import HEARTBEAT_PERIOD_S
from agentchemist_interfaces.msg import Heartbeat
from agentchemist_ros.common import topics
from agentchemist_ros.common.qos import RELIABLE
from agentchemist_ros.common.timeconv import node_now, to_msg


def start_heartbeat(node, period_s: float = HEARTBEAT_PERIOD_S):
    """Publish the node's heartbeat every `period_s` of its clock; returns the timer."""
    pub = node.create_publisher(Heartbeat, topics.HEARTBEATS, RELIABLE)
    instance = uuid.uuid4().hex[:12]
    name = node.get_name()
    return node.create_timer(period_s, lambda: pub.publish(Heartbeat(stamp=to_msg(node_now(node)), node=name,
                                                                     instance=instance)))


def watch_heartbeats(node, callback):
    """`callback(msg)` for every peer's heartbeat (the node's own are left out)."""
    own = node.get_name()
    return node.create_subscription(Heartbeat, topics.HEARTBEATS,
                                    lambda m: None if m.node == own else callback(m), RELIABLE)
