"""The recorder's status while the ROS clock stands still (issue 38): the twin holds its clock while the
supervisor waits for the recorder's return, so a status timer on that clock alone never fired and a recorder
stopped for 20 s (SIGSTOP) was seen back only at the twin's 60 s wait limit. Its status also goes out on the
wall clock: here the clock stands at 100 s and the statuses keep coming."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock as ClockMsg  # noqa: E402

from agentchemist_interfaces.msg import ExperimentPlan, RecorderStatus  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import LATCHED  # noqa: E402
from agentchemist_ros.common.timeconv import node_now, to_msg  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402
from tests.graph.test_wire_hijack import SCENARIO  # noqa: E402


class HeldClock(Node):
    def __init__(self):
        super().__init__("held_clock")
        self.statuses = []
        self.clock_pub = self.create_publisher(ClockMsg, "/clock", 10)
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.create_subscription(RecorderStatus, topics.RECORDER_STATUS, self.statuses.append, LATCHED)


def test_statuses_keep_coming_while_the_clock_stands_still(tmp_path):
    ensure_init()
    recorder = RecorderNode(parameter_overrides=[Parameter("runs_dir", value=str(tmp_path / "runs")),
                                                 Parameter("use_sim_time", value=True)])
    peer = HeldClock()
    plan = planned(SCENARIO)
    with spinning((recorder, peer), threads=2):
        assert wait_for(lambda: peer.clock_pub.get_subscription_count() >= 1, 10.0)
        for _ in range(20):  # the clock reaches 100 s and stays there
            peer.clock_pub.publish(ClockMsg(clock=to_msg(100.0)))
            time.sleep(0.02)
        assert wait_for(lambda: node_now(recorder) == 100.0, 5.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json(),
                                             stamp=to_msg(100.0)))
        assert wait_for(lambda: any(s.experiment_id == plan.experiment_id for s in peer.statuses), 10.0)
        first = len(peer.statuses)

        def later():
            return [s for s in peer.statuses[first:] if s.experiment_id == plan.experiment_id and s.recording]
        # about one every status_period_s (0.5 s) of wall time; a loaded machine is given time
        assert wait_for(lambda: len(later()) >= 3, 8.0), len(later())
        later = later()
    assert all(s.stored_through.sec == 100 for s in later)  # the clock did stand still
