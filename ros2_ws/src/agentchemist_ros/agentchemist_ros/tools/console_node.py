"""The console's ROS side: watches the run's topics into a RunView (agentchemist.console.state), keeps the
latest camera frames, and sends the chemist's commands to the graph's real interfaces:
plan and start: the planner's RunExperiment action (plan: dry_run); pause and resume: the supervisor's
/agentchemist/pause service (std_srvs/SetBool); cancel and emergency stop: the operator's halt on the
anomaly topic (kind operator_stop, source operator), which the supervisor obeys by aborting the run and
cancelling the arm's and the dispenser's goals."""
import threading

import cv2
from rclpy.action import ActionClient
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_srvs.srv import SetBool

from agentchemist.console.state import RunView
from agentchemist_interfaces.action import RunExperiment
from agentchemist_interfaces.msg import Anomaly, AudioEvent, ChemicalReading, ExperimentPlan, FsmState, FusedRecord
from agentchemist_ros.common import images, topics
from agentchemist_ros.common.qos import FSM, LATCHED, READINGS, RELIABLE, SENSOR
from agentchemist_ros.common.timeconv import to_sec

CAMERAS = ("front", "left_wrist", "right_wrist")


class ConsoleNode(Node):
    def __init__(self, **kwargs):
        super().__init__("console", **kwargs)
        self.view = RunView()
        self.frames: dict[str, bytes] = {}
        self._raw: dict[str, Image] = {}
        self._lock = threading.Lock()
        self.goal_handle = None
        self.create_subscription(ExperimentPlan, topics.PLAN,
                                 lambda m: self.view.on_plan(m.experiment_id, m.plan_json), LATCHED)
        self.create_subscription(FsmState, topics.FSM_STATE,
                                 lambda m: self.view.on_fsm(m.experiment_id, m.state, m.terminal), FSM)
        self.create_subscription(FusedRecord, topics.RECORDS,
                                 lambda m: self.view.on_record(m.experiment_id, m.quantity, m.value), RELIABLE)
        self.create_subscription(AudioEvent, topics.AUDIO_EVENTS, self._on_event, RELIABLE)
        self.create_subscription(Anomaly, topics.ANOMALIES, self._on_anomaly, RELIABLE)
        self.create_subscription(ChemicalReading, topics.BALANCE_READING,
                                 lambda m: self.view.on_record(self.view.experiment_id, "mass", m.value)
                                 if m.quantity == "mass" else None, READINGS)
        for cam in CAMERAS:
            self.create_subscription(Image, topics.camera_topic(cam), lambda m, c=cam: self._on_image(c, m), SENSOR)
        self.create_subscription(JointState, topics.JOINT_STATES,
                                 lambda m: self.view.on_joints(m.position, to_sec(m.header.stamp)), 10)
        self.run_client = ActionClient(self, RunExperiment, topics.RUN_EXPERIMENT)
        self.pause_client = self.create_client(SetBool, topics.PAUSE)
        self.halt_pub = self.create_publisher(Anomaly, topics.ANOMALIES, RELIABLE)

    def _on_event(self, m):
        if m.kind == "droplet" and m.classification == "expected":
            self.view.on_drop()

    def _on_anomaly(self, m):
        self.view.on_anomaly(kind=m.kind, severity=m.severity, source=m.source, description=m.description,
                             resolved=m.resolved, stamp=to_sec(m.stamp))

    def _on_image(self, camera, msg):
        with self._lock:
            self._raw[camera] = msg  # encoded on request: the twin renders faster than anyone looks

    def jpeg(self, camera: str) -> bytes | None:
        with self._lock:
            msg = self._raw.get(camera)
        if msg is None:
            return None
        frame = cv2.cvtColor(images.to_rgb(msg), cv2.COLOR_RGB2BGR)
        ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 80])
        return data.tobytes() if ok else None

    # ------------------------------------------------------------------ commands (futures; the server awaits them)
    def plan(self, instruction: str):
        return self.run_client.send_goal_async(RunExperiment.Goal(instruction=instruction, dry_run=True))

    def start(self, instruction: str):
        self.view.reset(instruction)
        future = self.run_client.send_goal_async(RunExperiment.Goal(instruction=instruction))
        future.add_done_callback(self._accepted)
        return future

    def _accepted(self, future):
        handle = future.result()
        if handle is None or not handle.accepted:
            return
        self.goal_handle = handle
        handle.get_result_async().add_done_callback(self._finished)

    def _finished(self, future):
        r = future.result().result
        self.view.on_result(outcome=r.outcome, message=r.message, experiment_id=r.experiment_id,
                            report_path=r.report_path)

    def pause(self, paused: bool):
        return self.pause_client.call_async(SetBool.Request(data=paused))

    def halt(self, why: str) -> None:
        """The operator's halt: the supervisor aborts the run and cancels every goal (docs/anomalies.md)."""
        self.halt_pub.publish(Anomaly(stamp=self.get_clock().now().to_msg(), experiment_id=self.view.experiment_id,
                                      source="operator", kind="operator_stop", severity="halt", response="abort",
                                      fsm_state=self.view.state, description=why))
