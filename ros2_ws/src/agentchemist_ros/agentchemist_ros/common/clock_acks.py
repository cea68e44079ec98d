"""An agent's acknowledgement of the twin's clock (ClockAck on /agentchemist/clock_acks).

A node in its own process that follows the twin's /clock (use_sim_time true) publishes, from a timer on
its ROS clock, the sim time its executor has reached. The twin keeps its clock at most max_lead_s ahead
of the slowest node that acknowledges (agentchemist.sim.lockstep), so a node starved of CPU slows the
twin instead of seeing the world rush past it. In the one-process graph (demo, scenario runner, tests)
the nodes share the twin's executor, whose queue keeps them in step, and their clocks are attached to
one time source rather than use_sim_time: nothing is published there. On the robot the clock is the
wall clock and nothing listens.
"""
from agentchemist_interfaces.msg import ClockAck
from agentchemist_ros.common import topics
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.timeconv import node_now, to_msg


def acknowledge_clock(node):
    """Declare clock_ack_period_s and start the acknowledgements (None when off or not on sim time)."""
    period = declare(node, "clock_ack_period_s", 0.5,
                     "Sim s between ClockAck messages to the twin (its clock stays within max_lead_s of the "
                     "slowest acknowledging node); 0 = off", low=0.0, high=1.0)
    # high=1.0: the twin's max_lead_s is at least 1 s (lab_sim_config), so a node that has caught up
    # always acknowledges before the twin would wait on it (no deadlock).
    if period <= 0.0 or not node.get_parameter("use_sim_time").value:
        return None
    pub = node.create_publisher(ClockAck, topics.CLOCK_ACKS, 10)
    name = node.get_fully_qualified_name()
    return node.create_timer(period, lambda: pub.publish(ClockAck(stamp=to_msg(node_now(node)), node=name)))
