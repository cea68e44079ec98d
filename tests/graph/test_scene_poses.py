"""DescribeScene's 3-D contract on the graph: the vision supervisor takes the front camera's CameraInfo and
aligned depth, and each object's pose is its tag's in the optical frame ``front_color_optical_frame`` (within 1 cm of
the MuJoCo model's truth); without CameraInfo every pose is all zeros, the quaternion included (unknown)."""
import json
import math

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist_interfaces.srv import DescribeScene  # noqa: E402
from agentchemist_ros.common import images, topics  # noqa: E402
from agentchemist_ros.common.qos import SENSOR  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402
from tests.scene_render import front_render  # noqa: E402


class Camera(Node):
    """The front camera as an RGB-D driver publishes it (colour, aligned 16UC1 depth, CameraInfo)."""

    def __init__(self):
        super().__init__("front_camera_stub")
        self.colour = self.create_publisher(Image, topics.camera_topic("front"), SENSOR)
        self.depth = self.create_publisher(Image, topics.depth_topic("front"), SENSOR)
        self.info = self.create_publisher(CameraInfo, topics.camera_info_topic("front"), SENSOR)
        self.client = self.create_client(DescribeScene, topics.DESCRIBE_SCENE)

    def header(self):
        return Header(stamp=self.get_clock().now().to_msg(), frame_id="front_color_optical_frame")

    def describe(self):
        future = self.client.call_async(DescribeScene.Request(camera="front"))
        assert wait_for(future.done, 20.0), "no DescribeScene answer"
        return future.result()


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    scene = front_render("titration_cluttered", tmp_path_factory.mktemp("assets"))
    ensure_init()
    node = VisionSupervisorNode(parameter_overrides=[Parameter("runs_dir", value=str(tmp_path_factory.mktemp("runs")))])
    camera = Camera()
    with spinning((node, camera), threads=4):
        assert wait_for(lambda: camera.client.service_is_ready(), 20.0)
        yield node, camera, scene


def _colour(node, camera, scene):
    camera.colour.publish(images.to_msg(scene["rgb"], "rgb8", camera.header()))
    assert wait_for(lambda: node.front is not None and node.front.shape == scene["rgb"].shape)


def test_without_camera_info_poses_are_unknown_zeros(graph):
    node, camera, scene = graph
    if node.front_geometry.info is not None:
        pytest.skip("camera_info already received (run alone or first)")
    _colour(node, camera, scene)
    response = camera.describe()
    assert response.success and response.header.frame_id == "front_color_optical_frame"
    assert response.objects
    for o in response.objects:
        p, q = o.pose.position, o.pose.orientation
        assert (p.x, p.y, p.z, q.x, q.y, q.z, q.w) == (0.0,) * 7
    extra = json.loads(response.checks_json)
    assert extra["on"] == {} and "no camera_info" in extra["no_3d"]


def test_with_camera_info_and_depth_poses_are_the_tags_in_the_optical_frame(graph):
    node, camera, scene = graph
    _colour(node, camera, scene)
    info = images.camera_info(scene["k"], scene["rgb"].shape[1], scene["rgb"].shape[0], camera.header())
    camera.info.publish(info)
    camera.depth.publish(images.depth_to_msg(scene["depth"], camera.header()))
    assert wait_for(lambda: node.front_geometry.info is not None and node.front_geometry.depth is not None)
    response = camera.describe()
    assert response.success and response.header.frame_id == "front_color_optical_frame"
    extra = json.loads(response.checks_json)
    assert extra["no_3d"] == "" and extra["checks"]["beaker_on_stirrer"]
    assert extra["on"]["beaker_main"] == "stirrer" and extra["on"]["beaker_small"] == "bench"
    for o in response.objects:
        p, q = o.pose.position, o.pose.orientation
        assert extra["pose_source"][o.id] == "depth"
        assert np.linalg.norm(np.subtract((p.x, p.y, p.z), scene["truth"][o.id])) < 0.01, o.id
        assert math.isclose(math.sqrt(q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2), 1.0, abs_tol=1e-6)


def test_camera_info_that_does_not_fit_the_image_gives_no_poses_and_says_why(graph):
    node, camera, scene = graph
    _colour(node, camera, scene)
    camera.info.publish(images.camera_info(scene["k"], 320, 240, camera.header()))
    assert wait_for(lambda: node.front_geometry.info is not None and node.front_geometry.info.width == 320)
    response = camera.describe()
    extra = json.loads(response.checks_json)
    assert response.success and "320 x 240" in extra["no_3d"]
    assert all(o.pose.orientation.w == 0.0 and o.pose.position.z == 0.0 for o in response.objects)
    nan_k = images.camera_info(scene["k"], 640, 480, camera.header())
    nan_k.k[0] = float("nan")
    camera.info.publish(nan_k)
    assert wait_for(lambda: math.isnan(node.front_geometry.info.k[0]))
    assert "not finite" in json.loads(camera.describe().checks_json)["no_3d"]


def test_gazebo_depth_in_metres_is_read_too(graph):
    """Gazebo's bridge sends depth as 32FC1 metres (docs/robot.md), the drivers 16UC1 millimetres."""
    node, camera, scene = graph
    _colour(node, camera, scene)
    camera.info.publish(images.camera_info(scene["k"], scene["rgb"].shape[1], scene["rgb"].shape[0], camera.header()))
    camera.depth.publish(images.to_msg(scene["depth"].astype(np.float32), "32FC1", camera.header()))
    assert wait_for(lambda: node.front_geometry.depth is not None and node.front_geometry.depth.encoding == "32FC1"
                    and node.front_geometry.info.width == scene["rgb"].shape[1]
                    and not math.isnan(node.front_geometry.info.k[0]))
    response = camera.describe()
    extra = json.loads(response.checks_json)
    assert extra["no_3d"] == "" and set(extra["pose_source"].values()) == {"depth"}
    o = next(o for o in response.objects if o.id == "beaker_main")
    assert np.linalg.norm(np.subtract((o.pose.position.x, o.pose.position.y, o.pose.position.z),
                                      scene["truth"]["beaker_main"])) < 0.01
