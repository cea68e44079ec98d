"""The ROS side of `agentchemist doctor`: listen to the expected topics for a few seconds and judge.

    agentchemist doctor                       # robot profile, 5 s of listening
    agentchemist doctor --profile twin --seconds 3

The judging (rates, CAN, calibrations, clocks) is agentchemist.hardware.readiness; this probe only
subscribes (best-effort subscriptions hear reliable and best-effort publishers alike), counts arrivals on
the wall clock and measures each stamped message's offset from its own ROS clock (sim time when the
profile runs on /clock). Exit code: 0 ready, 1 a check failed, 2 warnings with --strict.
"""
import argparse
import importlib
import sys
import time

import rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data
from rich.console import Console
from diagnostic_msgs.msg import DiagnosticArray
from rosgraph_msgs.msg import Clock

from agentchemist.hardware import readiness
from agentchemist.hardware.instruments.electrode import CalibrationStore


def message_class(type_name: str):
    package, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.{kind}"), name)


class DoctorProbe(Node):
    def __init__(self, profile: readiness.Profile):
        super().__init__("agentchemist_doctor",
                         parameter_overrides=[Parameter("use_sim_time", value=profile.sim_time)])
        self.observed = {t.topic: readiness.TopicObservation() for t in profile.topics}
        self.clock = readiness.TopicObservation()
        self.sim_first = self.sim_last = None
        for exp in profile.topics:
            try:
                cls = message_class(exp.type)
            except (ImportError, AttributeError, ValueError):
                self.get_logger().error(f"{exp.topic}: unknown message type {exp.type}")
                continue
            self.create_subscription(cls, exp.topic, lambda msg, t=exp.topic: self.on_msg(t, msg),
                                     qos_profile_sensor_data)
        self.create_subscription(Clock, "/clock", self.on_clock, qos_profile_sensor_data)
        self.diagnostics = {}
        self.create_subscription(DiagnosticArray, "/diagnostics", self.on_diagnostics, 50)

    def on_diagnostics(self, msg):
        for status in msg.status:
            level = status.level[0] if isinstance(status.level, bytes) else int(status.level)
            self.diagnostics[status.name] = (level, status.message)

    def on_msg(self, topic, msg):
        stamp = getattr(getattr(msg, "header", None), "stamp", None)
        skew = None
        if stamp is not None and (stamp.sec or stamp.nanosec):
            skew = self.get_clock().now().nanoseconds * 1e-9 - (stamp.sec + stamp.nanosec * 1e-9)
        self.observed[topic].add(time.monotonic(), skew)

    def on_clock(self, msg):
        t = msg.clock.sec + msg.clock.nanosec * 1e-9
        self.clock.add(time.monotonic())
        self.sim_first = t if self.sim_first is None else self.sim_first
        self.sim_last = t


def _until_a_fresh_pass(executor, timeout_s: float = 2.0) -> None:
    """Return once an executor another thread spins has begun a pass without the removed node.

    An rclpy executor gathers its nodes' entities at the start of a pass and adds them to the wait set
    after; a node destroyed in between makes the spinning thread raise InvalidHandle from a QoS event
    handler. A task runs at the start of a pass, so of two tasks queued one after the other the second runs
    in a pass begun after the first was done, hence after remove_node.
    """
    for _ in range(2):
        task = executor.create_task(lambda: None)
        end = time.monotonic() + timeout_s
        while not task.done() and time.monotonic() < end:
            time.sleep(0.005)


def observe(profile: readiness.Profile, seconds: float, executor=None) -> list[readiness.Check]:
    """Topic and clock checks after listening for `seconds` (rclpy must be initialised)."""
    probe = DoctorProbe(profile)
    own = executor is None
    if own:
        executor = rclpy.executors.SingleThreadedExecutor()
    executor.add_node(probe)
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if own:
                executor.spin_once(timeout_sec=0.05)
            else:
                time.sleep(0.05)
    finally:
        executor.remove_node(probe)
        if not own:
            _until_a_fresh_pass(executor)
        probe.destroy_node()
    advance = None if probe.sim_first is None else probe.sim_last - probe.sim_first
    return (readiness.topic_checks(profile.topics, probe.observed, profile.max_skew_s)
            + readiness.clock_checks(profile.sim_time, probe.clock, advance, readiness.ntp_synchronised())
            + readiness.diagnostic_checks(probe.diagnostics))


def run(args) -> int:
    profile = readiness.load_profile(args.profile)
    checks = readiness.can_checks(readiness.read_can_links(profile.can_interfaces),
                                   dict(zip(profile.can_interfaces, profile.can_bitrates)))
    checks += readiness.calibration_checks(profile.probes, CalibrationStore(args.calibration_file),
                                           time.time(), profile.acceptance)
    rclpy.init()
    try:
        checks += observe(profile, args.seconds)
    finally:
        rclpy.try_shutdown()
    readiness.render(checks, Console(), title=f"agentchemist doctor ({profile.name})")
    return readiness.exit_code(checks, args.strict)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agentchemist doctor", description="readiness check of the robot or twin")
    p.add_argument("--profile", default="robot", help="expectations from config/doctor.yaml (robot | twin)")
    p.add_argument("--seconds", type=float, default=5.0, help="how long to listen to the topics")
    p.add_argument("--calibration-file", default=None, help="electrode calibration store (default: the user's)")
    p.add_argument("--strict", action="store_true", help="warnings count as not ready too (exit 1)")
    return p


def main(argv=None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
