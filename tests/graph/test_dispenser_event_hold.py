"""The dispenser_controller node holds the gripper when a pH reading or the supervisor's `hold` arrives, not
at its next control tick (issue 20: pH -> hold p99 <= 10 ms; bench/latency.py measures it through DDS).

The node is driven by calling its callbacks directly and never spun, so its timer never fires: whatever it
publishes comes from the callback itself. The gripper opening it publishes stays where it was (a hold)."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist.contracts.dispense import GoalFields  # noqa: E402
from agentchemist_interfaces.msg import AgentMessage, ChemicalReading  # noqa: E402
from agentchemist_ros.common.timeconv import node_now, to_msg  # noqa: E402
from agentchemist_ros.dispenser_controller_node import DispenserControllerNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402


class Published:
    """What one publisher of the node sent (its publish replaced by a list's append)."""

    def __init__(self, publisher):
        self.sent = []
        publisher.publish = self.sent.append


@pytest.fixture
def node():
    ensure_init()
    n = DispenserControllerNode(parameter_overrides=[Parameter("control_period_s", value=1.0)])
    n.commands, n.states = Published(n.cmd_pub), Published(n.state_pub)
    n.on_joints(JointState(name=["right_gripper"], position=[0.040]))
    n._start(lambda: n.session.start(GoalFields(experiment_id="e1", subtask_id="titrate", use_target_ph=True,
                                                 target_ph=7.0, ph_direction=1, rate_mm_s=0.2),
                                     now=node_now(n)))
    yield n
    n.destroy_node()


def reading(n, value):
    n.on_reading(ChemicalReading(header=Header(stamp=to_msg(node_now(n))), sensor="ph_meter", quantity="pH",
                                 value=value, unit="pH", self_check_ok=True, noise=0.001))


def squeeze(n):
    """Readings below the target with the control updates they bring: the gripper closes (MOTION)."""
    for k in range(12):
        reading(n, 4.0 + 0.001 * (-1) ** k)
        time.sleep(0.05)
    assert n.controller.state.value == "MOTION"
    assert len(n.commands.sent) >= 10 and n.commands.sent[-1].data[0] < 0.040  # it squeezed on the readings


def test_a_reading_across_the_target_holds_the_gripper_on_arrival(node):
    squeeze(node)
    commands, states = len(node.commands.sent), len(node.states.sent)
    reading(node, 8.0)
    assert [(s.state, s.reason) for s in node.states.sent[states:]] == [("WAIT", "change_rate_high")]
    held = node.commands.sent[commands:]
    assert held and held[-1].data[0] == node.commands.sent[commands - 1].data[0]  # no further closing
    reading(node, 8.0)  # held: a reading does not move it again (WAIT is left on ticks only)
    assert node.commands.sent[-1].data[0] == held[-1].data[0] and len(node.states.sent) == states + 1


def test_the_supervisors_hold_holds_the_gripper_on_arrival(node):
    squeeze(node)
    commands, states = len(node.commands.sent), len(node.states.sent)
    node.on_message(AgentMessage(stamp=to_msg(node_now(node)), experiment_id="e1", sender="vision_supervisor",
                                 receiver="dispenser_controller", symbol="hold", payload_json='{"reason": "endpoint"}'))
    assert [(s.state, s.reason) for s in node.states.sent[states:]] == [("WAIT", "hold_command")]
    assert node.commands.sent[-1].data[0] == node.commands.sent[commands - 1].data[0]
