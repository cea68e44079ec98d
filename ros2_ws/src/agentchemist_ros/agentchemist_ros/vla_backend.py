"""The action_policy node's `vla` backend: ROS glue around agentchemist.policy.vla.serve.

Subscribes to the three cameras, the right gripper's contact microphone and the joint states; per goal it
runs a VLAEpisode at the policy's control rate on the node's clock (sim time in the twin), sending each
command as a one-point JointTrajectory per arm (time_from_start = one control period) and a gripper command
per side. A cancel, a `halt` anomaly (e.g. the arm's emergency stop) or a PolicyAbort stops it; the arms
are then held where they are (their measured joints sent as the command). The core decides; this module
only translates messages.
"""
from __future__ import annotations

import threading

import numpy as np
from builtin_interfaces.msg import Duration
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from agentchemist.contracts import Severity
from agentchemist.workcell.robot import JOINT_NAMES
from agentchemist.policy.vla.serve import Observation, PolicyAbort, PolicyRefused, VLARunner
from agentchemist_interfaces.action import ExecuteSubtask
from agentchemist_interfaces.msg import Anomaly, AudioChunk
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.codec import encode_policy_report
from agentchemist_ros.common.qos import AUDIO, RELIABLE, SENSOR
from agentchemist_ros.common.timeconv import node_now
from agentchemist_ros.common.waiting import resolved_after

AUDIO_KEEP_S = 12.0


class VLABackend:
    def __init__(self, node, cfg):
        self.node, self.lock = node, threading.Lock()
        self.runner, self.why = None, ""
        try:
            self.runner = VLARunner(cfg)
        except PolicyRefused as exc:
            self.why = str(exc)
            node.get_logger().error(self.why)
        self.obs = Observation()
        self.audio: list[np.ndarray] = []
        self.halted = ""
        for i, cam in enumerate(topics.CAMERAS):
            node.create_subscription(Image, topics.camera_topic(cam), lambda m, c=cam: self.on_image(c, m), SENSOR)
        node.create_subscription(AudioChunk, topics.audio_topic("right"), self.on_audio, AUDIO)
        node.create_subscription(JointState, topics.JOINT_STATES, self.on_joints, 10)
        node.create_subscription(Anomaly, topics.ANOMALIES, self.on_anomaly, RELIABLE)

    def on_image(self, cam, msg):
        try:
            rgb = images.to_rgb(msg)
        except ValueError:
            return  # a malformed image is not an observation; staleness catches a dead camera
        with self.lock:
            if cam == "front":
                self.obs.front = rgb
            else:
                self.obs.wrists[0 if cam == "left_wrist" else 1] = rgb
            self.obs.stamps[cam] = node_now(self.node)

    def on_audio(self, msg):
        with self.lock:
            self.audio.append(np.asarray(msg.data, np.float32) / 32768.0)
            self.obs.audio_rate = int(msg.sample_rate)
            keep = int(AUDIO_KEEP_S * msg.sample_rate)
            while sum(a.size for a in self.audio) > keep and len(self.audio) > 1:
                self.audio.pop(0)
            self.obs.audio = np.concatenate(self.audio)
            self.obs.stamps["audio"] = node_now(self.node)

    def on_joints(self, msg):
        with self.lock:
            known = dict(zip(msg.name, msg.position))
            prev = self.obs.state if self.obs.state is not None else np.full(len(JOINT_NAMES), np.nan)
            state = np.array([known.get(n, prev[i]) for i, n in enumerate(JOINT_NAMES)], float)
            self.obs.state = None if np.isnan(state).any() else state
            self.obs.stamps["joint states"] = node_now(self.node)

    def on_anomaly(self, msg):
        if msg.severity == Severity.HALT and not msg.resolved:
            self.halted = f"{msg.source} reported {msg.kind} (halt): {msg.description}"

    def snapshot(self) -> Observation:
        with self.lock:
            o = self.obs
            return Observation(o.front, list(o.wrists), o.audio, o.audio_rate,
                               None if o.state is None else o.state.copy(), dict(o.stamps))

    def send(self, command):
        dt = self.runner.dt if self.runner else 0.1
        for i, side in enumerate(topics.SIDES):
            arm = [float(v) for v in command[7 * i:7 * i + 6]]
            point = JointTrajectoryPoint(positions=arm, time_from_start=Duration(sec=int(dt), nanosec=int(dt % 1 * 1e9)))
            self.node.arm_pubs[side].publish(JointTrajectory(joint_names=[f"{side}_joint{k}" for k in range(1, 7)],
                                                             points=[point]))
            self.node.grip_pubs[side].publish(Float64MultiArray(data=[float(command[7 * i + 6])]))

    def hold(self):
        state = self.snapshot().state
        if state is not None:
            self.send(state)

    async def execute(self, goal_handle, primitive, parameters, symbol):
        """(success, message, report) of one subtask; the node turns it into the action result."""
        if self.runner is None:
            return False, f"policy backend 'vla' is not available: {self.why}", {}
        try:
            text = self.runner.instruction(primitive, parameters)
        except PolicyRefused as exc:
            return False, str(exc), {}
        self.halted = ""
        episode = self.runner.episode(text, node_now(self.node))
        while True:
            now = node_now(self.node)
            if goal_handle.is_cancel_requested or self.halted:
                self.hold()
                why = "canceled" if goal_handle.is_cancel_requested else f"stopped: {self.halted}"
                return False, why, episode.report(now, False)
            try:
                command = episode.step(self.snapshot(), now)
            except PolicyAbort as exc:
                self.hold()
                return False, f"{text}: {exc}", episode.report(now, False)
            self.send(command)
            if episode.done:
                report = episode.report(now, True)
                return True, f"{text} done: {encode_policy_report(report)}", report
            goal_handle.publish_feedback(ExecuteSubtask.Feedback(phase=f"vla {text}", progress=min(
                0.99, (now - episode.start) / self.runner.cfg.max_duration_s)))
            await resolved_after(self.node, self.runner.dt)
