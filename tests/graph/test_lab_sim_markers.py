"""lab_sim publishes the bench for rviz: a MarkerArray on /lab/bench_markers with the beaker and its liquid,
in base_link, every number finite; latched, so a subscriber that comes late still gets the bench; and
marker_rate_hz 0 turns it off."""
import math

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import LATCHED  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import before_marker, spinning, wait_for  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")


def numbers(m: Marker) -> list[float]:
    p, q, s, c = m.pose.position, m.pose.orientation, m.scale, m.color
    return [p.x, p.y, p.z, q.x, q.y, q.z, q.w, s.x, s.y, s.z, c.r, c.g, c.b, c.a]


def test_bench_markers_show_the_beaker_and_its_liquid_in_base_link():
    ensure_init()
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=20.0),
                                          Parameter("marker_rate_hz", value=10.0)])
    probe = Node("marker_probe")
    arrays: list[MarkerArray] = []
    probe.create_subscription(MarkerArray, topics.BENCH_MARKERS, arrays.append, LATCHED)
    with spinning([sim, probe]):
        assert wait_for(lambda: len(arrays) >= 3, 5.0), f"got {len(arrays)} MarkerArray messages in 5 s"
        msg = arrays[-1]
        assert sim.marker_pub.get_subscription_count() >= 1
    adds = {(m.ns, m.id): m for m in msg.markers if m.action == Marker.ADD}
    beaker, liquid = adds[("beaker_main", 0)], adds[("beaker_main", 1)]
    assert (beaker.type, liquid.type) == (Marker.CYLINDER, Marker.CYLINDER)
    assert liquid.scale.z > 0.0 and liquid.scale.x < beaker.scale.x  # inside the glass
    assert beaker.color.a < 1.0  # translucent glass
    # the bench stands in front of the robot at the deck's height (workcell_view.BENCH_IN_BASE_LINK)
    assert 0.4 < beaker.pose.position.x < 0.8 and abs(beaker.pose.position.y) < 0.05
    assert beaker.pose.position.z > 0.6
    assert any(m.type == Marker.TEXT_VIEW_FACING and m.text.startswith("pH ") for m in adds.values())
    for m in msg.markers:
        assert m.header.frame_id == "base_link"
        assert all(math.isfinite(v) for v in numbers(m)), (m.ns, m.id)
    assert len({(m.ns, m.id) for m in msg.markers}) == len(msg.markers)


def test_no_markers_when_the_rate_is_zero():
    ensure_init()
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("marker_rate_hz", value=0.0)])
    probe = Node("marker_probe_off")
    arrays: list[MarkerArray] = []
    probe.create_subscription(MarkerArray, topics.BENCH_MARKERS, arrays.append, LATCHED)
    marker_pub = probe.create_publisher(MarkerArray, topics.BENCH_MARKERS, LATCHED)
    end = MarkerArray(markers=[Marker(ns="end_of_test")])
    with spinning([sim, probe]):
        assert sim.marker_pub is None
        assert wait_for(lambda: sim.t > 3.0, 5.0)  # the twin runs ...
        # ... and draws nothing for rviz: the test's own marker array, published in this process after
        # those 3 s, comes after anything lab_sim published there
        before = before_marker(arrays, lambda: marker_pub.publish(end),
                               lambda m: [x.ns for x in m.markers] == ["end_of_test"])
    assert before == []
