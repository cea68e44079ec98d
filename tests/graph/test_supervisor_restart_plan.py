"""A vision supervisor that starts after a plan went out (restarted mid-run, in its own process) receives
the latched plan too; it must not run it: the planner ended that goal when it lost the old executor, and
running it again would move the robot for nobody. A plan sent to a running supervisor still runs."""
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.action import ExecuteSubtask  # noqa: E402
from agentchemist_interfaces.msg import Anomaly, ExperimentPlan, FsmState, RecorderStatus  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, LATCHED, RELIABLE  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from rclpy.action import ActionServer, GoalResponse  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"


class Peer(Node):
    """The planner's latched plan topic, and an action policy that counts the goals it is sent."""

    def __init__(self):
        super().__init__("restart_plan_peer")
        self.anomalies, self.states, self.goals = [], [], []
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.recorder_pub = self.create_publisher(RecorderStatus, topics.RECORDER_STATUS, LATCHED)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)
        self.server = ActionServer(self, ExecuteSubtask, topics.EXECUTE_SUBTASK, execute_callback=lambda g: g.abort(),
                                   goal_callback=self.on_goal)

    def on_goal(self, request):
        self.goals.append(request)
        return GoalResponse.REJECT

    def publish(self, plan, stamp_s):
        self.plan_pub.publish(ExperimentPlan(stamp=to_msg(stamp_s), experiment_id=plan.experiment_id,
                                             plan_json=plan.model_dump_json()))
        # the recorder's acknowledgement: nothing moves before it
        self.recorder_pub.publish(RecorderStatus(stamp=to_msg(stamp_s), experiment_id=plan.experiment_id,
                                                 recording=True, stored_through=to_msg(stamp_s)))


def supervisor(tmp_path):
    return VisionSupervisorNode(parameter_overrides=[Parameter("runs_dir", value=str(tmp_path)),
                                                     Parameter("require_scene_check", value=False)])


def test_a_supervisor_started_after_the_plan_went_out_does_not_run_it(tmp_path):
    ensure_init()
    peer = Peer()
    old = planned(SCENARIO)
    peer.publish(old, time.time() - 600.0)  # the predecessor's run, ten minutes ago (wall clock: no sim time)
    node = supervisor(tmp_path)
    with spinning((node, peer), threads=4):
        assert wait_for(lambda: any(s.experiment_id == old.experiment_id and s.terminal for s in peer.states), 10.0)
        assert wait_for(lambda: any(a.source == "vision_supervisor" for a in peer.anomalies), 5.0)
        # a fresh plan, sent while this supervisor runs, is run: it asks the action policy for its first subtask
        fresh = old.model_copy(update={"experiment_id": old.experiment_id + "-again"})
        peer.publish(fresh, time.time())
        assert wait_for(lambda: peer.goals, 15.0), [(s.experiment_id, s.state) for s in peer.states]
    ended = [s for s in peer.states if s.experiment_id == old.experiment_id]
    assert [s.state for s in ended] == ["aborted"], ended
    ours = [a for a in peer.anomalies if a.source == "vision_supervisor" and a.experiment_id == old.experiment_id]
    assert [(a.kind, a.severity, a.response) for a in ours] == [("invalid_plan", "halt", "abort")]
    assert "restarted mid-run" in ours[0].description and "send the goal again" in ours[0].description
