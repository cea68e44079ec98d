"""Record VLA demonstrations from a real robot under leader-arm teleoperation (LeRobot v3 layout).

    python -m agentchemist_ros.tools.teleop_record --out demos --task "grasp pipette" --seconds 20

The operator moves the two leader arms; their JointState topics (``/leader/<side>_arm/joint_states``,
names ``<side>_joint1..6`` and ``<side>_gripper``) are the action, ``/joint_states`` (the follower arms) the
state, the three camera topics and the right gripper's contact microphone the observations. Every message
is stamped with this node's clock when it arrives (use_sim_time in the twin), and the core
(agentchemist.policy.vla.teleop) samples the streams at the control rate into frames, written as one
episode. Nothing moves the robot from here: the leader-follower coupling is the arm driver's.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
import rclpy
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState

from agentchemist.workcell.robot import JOINT_NAMES
from agentchemist.policy.vla.dataset import ACTION, IMAGE_KEYS, STATE, DatasetWriter
from agentchemist.policy.vla.teleop import TeleopEpisode
from agentchemist_interfaces.msg import AudioChunk
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.qos import AUDIO, SENSOR
from agentchemist_ros.common.timeconv import node_now


def leader_topic(side: str) -> str:
    return f"/leader/{side}_arm/joint_states"


class TeleopRecorder(Node):
    def __init__(self, fps: int = 10, sample_rate: int = 16000, **kwargs):
        super().__init__("teleop_recorder", **kwargs)
        self.episode = TeleopEpisode(fps=fps, sample_rate=sample_rate)
        self.sample_rate = sample_rate
        self.joints: dict[str, dict[str, float]] = {"leader": {}, "follower": {}}
        for side in topics.SIDES:
            self.create_subscription(JointState, leader_topic(side), lambda m: self.on_joints("leader", m), 50)
        self.create_subscription(JointState, topics.JOINT_STATES, lambda m: self.on_joints("follower", m), 50)
        for cam, key in zip(topics.CAMERAS, IMAGE_KEYS):
            self.create_subscription(Image, topics.camera_topic(cam), lambda m, k=key: self.on_image(k, m), SENSOR)
        self.create_subscription(AudioChunk, topics.audio_topic("right"), self.on_audio, AUDIO)

    def on_joints(self, which, msg):
        self.joints[which].update(zip(msg.name, msg.position))
        values = [self.joints[which].get(n) for n in JOINT_NAMES]
        if all(v is not None for v in values):
            self.episode.add(ACTION if which == "leader" else STATE, node_now(self), np.asarray(values, np.float32))

    def on_image(self, key, msg):
        try:
            self.episode.add(key, node_now(self), images.to_rgb(msg))
        except ValueError:
            pass  # a malformed frame is skipped; the sampler uses the latest good one

    def on_audio(self, msg):
        samples = np.asarray(msg.data, np.float32) / 32768.0
        if msg.sample_rate != self.sample_rate:
            from scipy.signal import resample_poly
            from math import gcd
            g = gcd(int(msg.sample_rate), self.sample_rate)
            samples = resample_poly(samples, self.sample_rate // g, int(msg.sample_rate) // g)
        self.episode.add_audio(node_now(self), samples)

    def write(self, out: str, task: str) -> int:
        frames = self.episode.frames()
        shapes = {k: tuple(np.asarray(frames[0][k]).shape) for k in IMAGE_KEYS}
        writer = DatasetWriter(out, self.episode.fps, shapes, self.sample_rate // self.episode.fps, source="teleop")
        writer.add_episode(frames, task)
        writer.finalize()
        return len(frames)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--task", required=True, help="the subtask's instruction, e.g. 'grasp pipette'")
    ap.add_argument("--seconds", type=float, default=20.0, help="wall seconds to record")
    ap.add_argument("--fps", type=int, default=10)
    args, ros_args = ap.parse_known_args(argv)
    rclpy.init(args=ros_args)
    node = TeleopRecorder(fps=args.fps)
    end = node.get_clock().now().nanoseconds + int(args.seconds * 1e9)
    try:
        while rclpy.ok() and node.get_clock().now().nanoseconds < end:
            rclpy.spin_once(node, timeout_sec=0.1)
        n = node.write(args.out, args.task)
        print(f"{n} frames written to {args.out}")
        return 0
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
