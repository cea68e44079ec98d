"""The other OS process of the cross-process interface test.

`publisher`: publishes one sample of every custom message type (with SceneObject inside a
DescribeScene response served to the test) and serves the Dispense action with feedback.
Runs until killed or until `--seconds` elapse.
"""
import argparse
import time

import rclpy
from rclpy.action import ActionServer
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from agentchemist_interfaces.action import Dispense
from agentchemist_interfaces.srv import DescribeScene
from agentchemist_ros.common.qos import LATCHED
from tests.graph.interface_samples import samples


class Peer(Node):
    def __init__(self):
        super().__init__("interface_peer")
        self.samples = samples()
        # Latched publishers: the subscriber may join after we publish.
        self.pubs = {name: self.create_publisher(type(msg), f"/itest/{name}", LATCHED)
                     for name, msg in self.samples.items() if name != "SceneObject"}
        for name, pub in self.pubs.items():
            pub.publish(self.samples[name])
        self.create_service(DescribeScene, "/itest/describe_scene", self.describe)
        self.action = ActionServer(self, Dispense, "/itest/dispense", self.execute)

    def describe(self, request, response):
        response.success = True
        response.message = f"camera {request.camera}"
        response.objects = [self.samples["SceneObject"]]
        response.checks_json = '{"beaker_on_stirrer": true}'
        return response

    def execute(self, goal_handle):
        g = goal_handle.request
        dispensed = 0.0
        for i in range(5):
            dispensed += 0.046875
            goal_handle.publish_feedback(Dispense.Feedback(
                controller_state="MOTION" if i < 4 else "WAIT", dispensed_ml=dispensed, drops=i + 1,
                gripper_position_mm=60.0 - 0.05 * (i + 1), ph=3.0 + 0.1 * i))
            time.sleep(0.05)
        goal_handle.succeed()
        return Dispense.Result(success=True, stop_reason="target_volume", dispensed_ml=dispensed, drops=5,
                               final_ph=3.4, message=f"dispensed for {g.experiment_id}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    rclpy.init()
    node = Peer()
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    end = time.monotonic() + args.seconds
    try:
        while rclpy.ok() and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.1)
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
