"""The vision_supervisor node on bad front-camera input: an unsupported encoding, a wrong size, a mono
image and a frame without the beaker tag are anomalies (once per episode, resolved by the next good
frame); good frames become vision-channel colour_hue QuantityEstimates. The machine never moves."""

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.action import ActionServer  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.task import Future  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist.sim.lab import LabTwin  # noqa: E402
from agentchemist.sim.scenario import load_scenario  # noqa: E402
from agentchemist_interfaces.action import ExecuteSubtask  # noqa: E402
from agentchemist_interfaces.msg import Anomaly, ExperimentPlan, FsmState, QuantityEstimate  # noqa: E402
from agentchemist_ros.common import images, topics  # noqa: E402
from agentchemist_ros.common.qos import FSM, LATCHED, RELIABLE, SENSOR  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import before_marker, spinning, wait_for  # noqa: E402

SCENARIO = REPO / "tests" / "data" / "scenarios" / "ca_edta_short.yaml"


class Bench(Node):
    """Publishes the plan and camera frames; holds the first subtask forever (a busy action policy)."""

    def __init__(self):
        super().__init__("bench_stub")
        self.anomalies, self.hues, self.states = [], [], []
        self.plan_pub = self.create_publisher(ExperimentPlan, topics.PLAN, LATCHED)
        self.image_pub = self.create_publisher(Image, topics.camera_topic("front"), SENSOR)
        self.create_subscription(Anomaly, topics.ANOMALIES, self.anomalies.append, RELIABLE)
        self.create_subscription(QuantityEstimate, topics.QUANTITY, self.hues.append, RELIABLE)
        self.create_subscription(FsmState, topics.FSM_STATE, self.states.append, FSM)
        self.never = Future()
        self.server = ActionServer(self, ExecuteSubtask, topics.EXECUTE_SUBTASK, execute_callback=self.execute)

    async def execute(self, goal_handle):
        await self.never  # the grasp never finishes: the machine stays in its initial state
        return ExecuteSubtask.Result()


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    ensure_init()
    node = VisionSupervisorNode(parameter_overrides=[
        Parameter("runs_dir", value=str(tmp_path_factory.mktemp("runs"))),
        Parameter("require_scene_check", value=False)])
    bench = Bench()
    with spinning((node, bench), threads=4):
        plan = planned(SCENARIO)
        bench.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json(),
                                              stamp=node.get_clock().now().to_msg()))
        assert wait_for(lambda: node.ex is not None and bench.states)
        frame = LabTwin(load_scenario(SCENARIO)).render_camera("front", 1.0)
        yield node, bench, frame


def _start(bench):
    """Each test's times count from after the last frame any test sent (the supervisor drops a frame older
    than the last it took), so the tests pass in any order (make test-random)."""
    bench.base = getattr(bench, "last", 0.0) + 10.0


def _send(bench, msg, t):
    stamp = getattr(bench, "base", 0.0) + t
    bench.last = max(getattr(bench, "last", 0.0), stamp)
    msg.header = Header(stamp=to_msg(stamp), frame_id="front_color_optical_frame")
    bench.image_pub.publish(msg)


def _good(bench, frame, t):
    n = len(bench.hues)
    _send(bench, images.to_msg(frame, "rgb8"), t)
    assert wait_for(lambda: len(bench.hues) > n), "no colour_hue estimate for a good frame"
    return bench.hues[-1]


def _expect_anomaly(bench, kind, text, send):
    n = len(bench.anomalies)
    send()
    assert wait_for(lambda: any(a.kind == kind for a in bench.anomalies[n:])), f"no {kind} anomaly"
    found = next(a for a in bench.anomalies[n:] if a.kind == kind)
    assert text in found.description and found.severity == "warn" and found.source == "vision_supervisor"


def test_good_frames_become_vision_hue_estimates(graph):
    node, bench, frame = graph
    _start(bench)
    est = _good(bench, frame, 2.0)
    assert est.quantity == "colour_hue" and est.unit == "deg" and est.channel == "vision"
    assert 320.0 < est.value < 335.0 and est.confidence > 0.8  # magenta
    assert est.fsm_state == "initial" and est.experiment_id == node.experiment_id


def test_bad_frames_are_anomalies_once_per_episode(graph):
    node, bench, frame = graph
    _start(bench)
    states_before = len(bench.states)
    weird = images.to_msg(frame, "rgb8")
    weird.encoding = "yuv422"
    _expect_anomaly(bench, "bad_image", "unsupported image encoding 'yuv422'", lambda: _send(bench, weird, 3.0))
    n = len(bench.anomalies)
    for i in range(5):  # the same problem again: not reported at the frame rate
        _send(bench, weird, 3.5 + 0.1 * i)
    # the marker: a good frame after them makes the supervisor report the problem resolved, on the same
    # anomaly publisher as any report of the five, which would therefore have arrived first
    before = before_marker(bench.anomalies, lambda: _good(bench, frame, 4.0),
                           lambda a: a.kind == "bad_image" and a.resolved, since=n)
    assert not [a for a in before if a.kind == "bad_image"]

    short = images.to_msg(frame, "rgb8")
    short.data = bytes(short.data)[: len(short.data) // 2]
    _expect_anomaly(bench, "bad_image", "needs", lambda: _send(bench, short, 5.0))
    _good(bench, frame, 6.0)

    mono = images.to_msg(frame[:, :, 1], "mono8")
    _expect_anomaly(bench, "bad_image", "mono8", lambda: _send(bench, mono, 7.0))
    _good(bench, frame, 8.0)

    bare = np.full_like(frame, 110)  # no tag, no liquid: the colour cannot be read
    _expect_anomaly(bench, "colour_unreadable", "not found", lambda: _send(bench, images.to_msg(bare, "rgb8"), 20.0))
    # another problem follows: the first one is over (resolved), the new one open until a good frame
    n = len(bench.anomalies)
    _expect_anomaly(bench, "bad_image", "yuv422", lambda: _send(bench, weird, 21.0))
    assert wait_for(lambda: any(a.kind == "colour_unreadable" and a.resolved for a in bench.anomalies[n:]))
    _good(bench, frame, 22.0)
    assert wait_for(lambda: any(a.kind == "bad_image" and a.resolved for a in bench.anomalies[n:]))
    assert node.ex.machine.state == "initial" and len(bench.states) == states_before
