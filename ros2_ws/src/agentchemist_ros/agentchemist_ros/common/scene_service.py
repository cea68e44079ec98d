"""The DescribeScene service of the vision supervisor: what the front camera shows (objects, the scene
checks with their reasons, what the lab inventory says each seen container holds) and a one-line summary
from the configured vision backend.

With the front camera's CameraInfo (and its depth aligned to colour), each object's ``pose`` is its tag's
pose in the camera's optical frame ``front_color_optical_frame`` (the URDF's link; perception/tag_pose.py says how and
which of depth and PnP wins); without (the kinematic twin), all zeros, the quaternion too: unknown."""
from geometry_msgs.msg import Point, Pose, Quaternion
from sensor_msgs.msg import CameraInfo, Image

from agentchemist.workcell.inventory import InventoryError, load_inventory
from agentchemist.workcell.robot import camera_optical_frame

from agentchemist.perception.scene import describe_scene
from agentchemist.perception.tag_pose import CameraModel, CameraModelError, depth_metres
from agentchemist.perception.vlm import make_backend, scene_summary
from agentchemist_interfaces.msg import SceneObject
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.codec import encode_checks
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import SENSOR
from agentchemist_ros.common.timeconv import to_msg, to_sec

#: The URDF's optical frame of the front camera (x right, y down, z forward): the poses' frame.
FRONT_OPTICAL_FRAME = camera_optical_frame("front")
#: A depth image older than this (s, ROS clock) at a DescribeScene call is not used (the colour frame is
#: the latest one; both come at the camera's rate from the same camera).
MAX_DEPTH_AGE_S = 1.0


class FrontGeometry:
    """The front camera's latest CameraInfo and aligned depth image, for the tags' 3-D poses."""

    def __init__(self, node, camera: str = "front"):
        self.info = self.depth = None
        node.create_subscription(CameraInfo, topics.camera_info_topic(camera), self.on_info, SENSOR)
        node.create_subscription(Image, topics.depth_topic(camera), self.on_depth, SENSOR)

    def on_info(self, msg):
        self.info = msg

    def on_depth(self, msg):
        self.depth = msg

    def for_frame(self, frame, now: float):
        """(camera model or None, depth in metres or None, why there is no 3-D, '' when there is)."""
        info, depth = self.info, self.depth
        if info is None:
            return None, None, "no camera_info from the front camera: no 3-D positions"
        try:
            camera = CameraModel.from_camera_info(info.k, info.d, info.width, info.height, info.distortion_model)
        except CameraModelError as exc:
            return None, None, f"front camera_info is unusable: {exc}"
        if camera.size_mismatch(frame):
            return None, None, f"front camera_info does not fit the image: {camera.size_mismatch(frame)}"
        if depth is None or now - to_sec(depth.header.stamp) > MAX_DEPTH_AGE_S:
            return camera, None, ""
        try:
            metres = depth_metres(images.to_rgb(depth))
        except (images.ImageEncodingError, ValueError) as exc:
            return camera, None, f"front depth image is unusable: {exc}"
        return camera, (metres if metres.shape == frame.shape[:2] else None), ""


def pose_msg(pose) -> Pose:
    """geometry_msgs/Pose of a TagPose; None -> all zeros (a zero quaternion: unknown)."""
    if pose is None:
        return Pose(orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=0.0))
    x, y, z = pose.position
    qx, qy, qz, qw = pose.quaternion
    return Pose(position=Point(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))


def describe_front(frame, backend, now: float, request, response, inventory_file: str = "", geometry=None):
    response.header.stamp = to_msg(now)
    response.header.frame_id = FRONT_OPTICAL_FRAME
    if request.camera not in ("", "front") or frame is None:
        response.success = False
        response.message = f"camera {request.camera!r} is not used for scene checks" if request.camera not in \
            ("", "front") else "no front camera image received yet"
        return response
    try:  # read at every call: the lab updates the file when a bottle is refilled or replaced
        inventory, inventory_error = load_inventory(inventory_file or None), ""
    except InventoryError as exc:
        inventory, inventory_error = None, str(exc)
    camera, depth, no_3d = geometry.for_frame(frame, now) if geometry is not None else (None, None, "")
    desc = describe_scene(frame, inventory=inventory, camera=camera, depth_m=depth)
    response.objects = [SceneObject(id=o.id, kind=o.kind, u=o.u, v=o.v, confidence=o.confidence,
                                    pose=pose_msg(o.pose)) for o in desc.objects]
    response.checks_json = encode_checks({"checks": desc.checks, "reasons": desc.reasons,
                                          "image_size": list(desc.image_size or ()), "contents": desc.contents,
                                          "inventory_error": inventory_error, "on": desc.supports,
                                          "pose_source": {o.id: o.pose.source for o in desc.objects if o.pose},
                                          "no_3d": no_3d})
    response.success, response.message = True, scene_summary(frame, len(desc.objects), backend)
    return response


def declared_inventory(node) -> str:
    """The lab inventory file the scene reports contents from ('' = config/inventory.yaml)."""
    return declare(node, "inventory_file", "", "Lab inventory YAML: what each tagged container holds "
                   "('' = config/inventory.yaml; the scenario runner writes the twin's)")


def declared_backend(node):
    """The node's scene description backend from its parameters (opencv, or an OpenAI-compatible VLM)."""
    backend = declare(node, "vision_backend", "opencv",
                      "Scene description backend: opencv (default) | openai (an OpenAI-compatible VLM endpoint)")
    vlm = {"base_url": declare(node, "vlm_base_url", "", "OpenAI-compatible endpoint, e.g. http://host:8000/v1"),
           "model": declare(node, "vlm_model", "", "Model name served at vlm_base_url"),
           "timeout_s": declare(node, "vlm_timeout_s", 20.0, "Timeout of one VLM request (s)", low=0.1, high=600.0)}
    return make_backend("opencv") if backend == "opencv" else make_backend(backend, **vlm)
