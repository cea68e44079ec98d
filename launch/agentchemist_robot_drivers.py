"""Robot-side drivers for robot.launch.py: serial instruments, the three RGB-D cameras, both contact
microphones and the mobile base. Loaded by path like agentchemist_launch_common (not a package).

Cameras: the vendor ROS 2 drivers, one node per camera, placed so that every driver publishes the topic
names of DESIGN.md's map: namespace /camera and node name front | left_wrist | right_wrist give
/camera/<name>/color/image_raw (+ camera_info, and depth aligned to colour for distances to labware).
- orbbec: OrbbecSDK_ROS2's orbbec_camera_node (the robot's Orbbec DC1 / Gemini units): camera_name,
  serial_number, color_/depth_ width, height, fps, depth_registration (depth aligned to colour).
- realsense: realsense2_camera_node: camera_name, serial_no, rgb_camera.color_profile /
  depth_module.depth_profile "640,480,30", align_depth.enable.
Both stamp images <name>_color_optical_frame, the URDF's frame; publish_tf false leaves the camera frames
to robot_state_publisher (the URDF's calibrated mount), so TF has one parent for each.
Both publish through image_transport, so with image_transport_plugins installed every image topic also has
a .../compressed JPEG stream: a consumer on another host (the GPU workstation) subscribes to the wrist
cameras' compressed streams (`ros2 run image_transport republish` turns them back into raw there) instead of
pulling raw 640x480 RGB at 30 fps over the network. None of this can run here: no vendor driver, no launch.
"""
from launch.actions import DeclareLaunchArgument, GroupAction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node

import agentchemist_launch_common as common

CAMERAS = ("front", "left_wrist", "right_wrist")
WRIST_JPEG_QUALITY = 80
SIDES = ("left", "right")


def arguments() -> list:
    return [
        DeclareLaunchArgument(
            "with_instruments", default_value="true", choices=["true", "false"],
            description="Start the ph_meter and balance serial drivers (ChemicalReading on /lab/ph_meter/reading "
                        "and /lab/balance/reading, tare/zero services)"),
        DeclareLaunchArgument("ph_port", default_value="/dev/serial/by-id/ph_meter",
                              description="Serial device of the pH meter (a udev by-id link survives re-plugging)"),
        DeclareLaunchArgument("ph_dialect", default_value="tps_continuous", choices=["tps_continuous", "hanna_ras"],
                              description="pH meter protocol: continuous lines (TPS) or request/response (Hanna RAS)"),
        DeclareLaunchArgument("ph_probe_id", default_value="ph_probe_1",
                              description="Electrode id: its calibration in the user store (agentchemist ph-calibrate)"),
        DeclareLaunchArgument("balance_port", default_value="/dev/serial/by-id/balance",
                              description="Serial device of the balance"),
        DeclareLaunchArgument("balance_dialect", default_value="mt_sics", choices=["mt_sics", "sartorius_sbi"],
                              description="Balance protocol: MT-SICS request/response or Sartorius SBI continuous"),
        DeclareLaunchArgument(
            "camera_driver", default_value="orbbec", choices=["orbbec", "realsense", "none"],
            description="RGB-D camera driver for the front and both wrist cameras (vendor ROS 2 package), or none"),
        *[DeclareLaunchArgument(f"{cam}_camera_serial", default_value="",
                                description=f"Serial number of the {cam.replace('_', ' ')} camera ('' = the only "
                                            "one connected; required with more than one camera)")
          for cam in CAMERAS],
        DeclareLaunchArgument(
            "with_base", default_value="false", choices=["true", "false"],
            description="Start the AgileX Tracer base driver (tracer_base_node: /cmd_vel geometry_msgs/Twist in, "
                        "/odom out); off by default: it moves the robot, and tracer_base has no Jazzy release "
                        "(build it from source in the workspace first)"),
        DeclareLaunchArgument("can_base", default_value="can_base",
                              description="SocketCAN interface of the base (500 kbit/s, the Tracer's rate)"),
    ]


def instrument_nodes() -> GroupAction:
    """ph_meter and balance with the ports and dialects of the arguments (other values: params_file)."""
    return GroupAction(
        condition=IfCondition(LaunchConfiguration("with_instruments")),
        actions=[
            common.agentchemist_node("ph_meter", use_sim_time=False, overrides={
                "port": common.text("ph_port"), "dialect": common.text("ph_dialect"),
                "probe_id": common.text("ph_probe_id")}),
            common.agentchemist_node("balance", use_sim_time=False, overrides={
                "port": common.text("balance_port"), "dialect": common.text("balance_dialect")}),
        ])


def _is(driver: str) -> IfCondition:
    return IfCondition(PythonExpression(["'", LaunchConfiguration("camera_driver"), f"' == '{driver}'"]))


def camera_nodes() -> list:
    orbbec, realsense = [], []
    for cam in CAMERAS:
        intrinsics = "file://" + common.share("config", "cameras", f"{cam}.yaml")
        jpeg = ({f"color.image_raw.compressed.jpeg_quality": WRIST_JPEG_QUALITY} if cam != "front" else {})
        orbbec.append(Node(
            package="orbbec_camera", executable="orbbec_camera_node", namespace="camera", name=cam, output="screen",
            parameters=[{"camera_name": cam, "serial_number": common.text(f"{cam}_camera_serial"),
                         "color_width": 640, "color_height": 480, "color_fps": 30, "enable_depth": True,
                         "depth_width": 640, "depth_height": 480, "depth_fps": 30, "depth_registration": True,
                         "enable_point_cloud": False, "color_info_url": intrinsics, "publish_tf": False, **jpeg}]))
        realsense.append(Node(
            package="realsense2_camera", executable="realsense2_camera_node", namespace="camera", name=cam,
            output="screen",
            parameters=[{"camera_name": cam, "serial_no": common.text(f"{cam}_camera_serial"),
                         "rgb_camera.color_profile": "640,480,30", "depth_module.depth_profile": "640,480,30",
                         "enable_depth": True, "align_depth.enable": True, "pointcloud.enable": False, "publish_tf": False,
                         **jpeg}]))
    return [GroupAction(condition=_is("orbbec"), actions=orbbec),
            GroupAction(condition=_is("realsense"), actions=realsense)]


def microphone_nodes() -> GroupAction:
    """One audio_capture per gripper (left_audio_capture, right_audio_capture); device names from params_file
    (block audio_capture: device), side set here. Off unless with_audio_capture:=true."""
    return GroupAction(
        condition=IfCondition(LaunchConfiguration("with_audio_capture")),
        actions=[common.agentchemist_node("audio_capture", use_sim_time=False, node_name=f"{side}_audio_capture",
                                          overrides={"side": side,
                                                     "device": common.text(f"{side}_microphone")})
                 for side in SIDES])


def microphone_arguments() -> list:
    return [DeclareLaunchArgument(f"{side}_microphone", default_value="AOM",
                                  description=f"PortAudio name (substring) of the {side} gripper's contact microphone "
                                              "(arecord -l lists them; docs/robot.md, ALSA)")
            for side in SIDES]


def base_node() -> Node:
    return Node(package="tracer_base", executable="tracer_base_node", name="tracer_base", output="screen",
                condition=IfCondition(LaunchConfiguration("with_base")),
                parameters=[{"port_name": common.text("can_base"), "odom_frame": "odom",
                             "base_frame": "base_link", "odom_topic_name": "odom"}])
