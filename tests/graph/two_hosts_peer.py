"""Two "hosts" as two network namespaces joined by a veth link (run by test_two_hosts.py):

- `robot` (started inside `unshare -n`): makes the link, starts the `workstation` in a second namespace
  (`unshare -n`), moves the link's other end into it, then runs the real piper_driver node (its CAN loop
  thread) against the simulated firmware on a python-can virtual bus;
- `workstation`: a probe node that plays ros2_control's topic-based system over DDS across the link:
  it commands the arm, and keeps commanding a second target while the link is down.

Discovery is what docker/compose.yaml uses: ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and ROS_STATIC_PEERS
naming the other side, one ROS_DOMAIN_ID. The robot drops the link for 5 s after the arm reached the
first target. The two sides talk to each other (orchestration only) through the workstation's stdin /
stdout; the robot prints one JSON line with what it saw."""
import json
import os
import subprocess
import sys
import threading
import time

ROBOT_IP, STATION_IP = "10.77.0.1", "10.77.0.2"
START = (0.1, 0.5, -0.5, 0.2, 0.3, -1.0)
TARGET_A = (0.4, 0.6, -0.4, 0.2, 0.3, -1.0)
TARGET_B = (-0.2, 0.4, -0.6, 0.2, 0.3, -1.0)
NAMES = [f"left_joint{i}" for i in range(1, 7)] + ["left_gripper"]


def sh(cmd: str) -> None:
    subprocess.run(["sh", "-c", cmd], check=True)


def ros_env(peer: str) -> None:
    os.environ.update(ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", ROS_STATIC_PEERS=peer,
                      RMW_IMPLEMENTATION="rmw_fastrtps_cpp")


def near(a, b, tol=1e-3):
    return all(abs(x - y) < tol for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------------ workstation
def workstation() -> int:
    assert sys.stdin.readline().strip() == "link"              # the robot moved our end in
    sh(f"ip link set lo up && ip addr add {STATION_IP}/24 dev w0 && ip link set w0 up")
    ros_env(ROBOT_IP)
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from rclpy.executors import SingleThreadedExecutor

    rclpy.init()
    node = Node("workstation_probe")
    states = []
    node.create_subscription(JointState, "/left_piper/joint_states", states.append, 10)
    pub = node.create_publisher(JointState, "/left_piper/joint_commands", 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    done = threading.Event()
    spin = threading.Thread(target=lambda: [executor.spin_once(0.05) for _ in iter(done.is_set, True)], daemon=True)
    spin.start()

    def say(what):
        print(what, flush=True)

    def wait(cond, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cond():
                return True
            time.sleep(0.02)
        return False

    if not wait(lambda: states, 60):
        say("no_states")
        return 1
    target = list(states[-1].position[:6])
    stop = threading.Event()

    def command():
        while not stop.is_set():
            pub.publish(JointState(name=NAMES, position=[*target, 0.03]))
            time.sleep(0.01)                    # ros2_control's commands at ~100 Hz
    threading.Thread(target=command, daemon=True).start()
    time.sleep(0.5)                              # the startup hold: commands at the arm first
    target[:] = TARGET_A
    if not wait(lambda: near(states[-1].position, TARGET_A), 30):
        say("not_reached_a")
        return 1
    say("reached_a")
    assert sys.stdin.readline().strip() == "link_down"
    target[:] = TARGET_B                         # keeps commanding B: none of it crosses a dead link
    n_before = len(states)
    assert sys.stdin.readline().strip() == "link_up"
    heard_during = len(states) - n_before        # a few may have been in flight
    ok = wait(lambda: len(states) > n_before + heard_during + 20, 60)
    say(json.dumps({"states_after_link_up": ok, "heard_during_drop": heard_during}))
    wait(lambda: near(states[-1].position, TARGET_B), 30)
    say("reached_b" if near(states[-1].position, TARGET_B) else "not_reached_b")
    stop.set()
    done.set()
    spin.join(2)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


# ------------------------------------------------------------------------------------------------ robot
def robot() -> int:
    sh("ip link set lo up && ip link add r0 type veth peer name w0")
    station = subprocess.Popen(["unshare", "-n", sys.executable, __file__, "workstation"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    out = {"log": []}
    try:
        time.sleep(0.5)
        sh(f"ip link set w0 netns {station.pid} && ip addr add {ROBOT_IP}/24 dev r0 && ip link set r0 up")
        station.stdin.write("link\n")
        station.stdin.flush()
        ros_env(STATION_IP)
        run_robot(station, out)
    finally:
        try:
            station.wait(timeout=90)
        except subprocess.TimeoutExpired:
            station.kill()
    print(json.dumps(out))
    return 0


def run_robot(station, out) -> None:
    import can
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    from agentchemist.hardware.piper import PiperFirmwareSim
    from agentchemist_ros.piper_driver_node import PiperDriverNode

    channel = "two-hosts-left"
    fw_bus = can.Bus(interface="virtual", channel=channel)
    fw = PiperFirmwareSim(fw_bus, joints_rad=START, gripper_m=0.03)
    lock, stop = threading.Lock(), threading.Event()

    def firmware():
        while not stop.is_set():
            with lock:
                fw.step(time.monotonic())
            time.sleep(0.0025)
    threading.Thread(target=firmware, daemon=True).start()
    rclpy.init()
    node = PiperDriverNode(cli_args=["--ros-args", "-r", "__node:=left_piper_driver",
                                     "-r", "joint_states:=/left_piper/joint_states",
                                     "-r", "joint_commands:=/left_piper/joint_commands"],
                           parameter_overrides=[Parameter("side", value="left"),
                                                Parameter("can_interface", value=channel),
                                                Parameter("can_bustype", value="virtual")])
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spin = threading.Thread(target=lambda: [executor.spin_once(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    spin.start()
    line = station.stdout.readline().strip()
    out["log"].append(line)
    if line == "reached_a":
        sh("ip link set r0 down")
        station.stdin.write("link_down\n")
        station.stdin.flush()
        t_down = time.monotonic()
        with lock:
            held = list(fw.joint_targets)
        samples = []
        while time.monotonic() - t_down < 5.0:
            with lock:
                samples.append(list(fw.joints))
            time.sleep(0.1)
        with lock:
            out["targets_during_drop_unchanged"] = fw.joint_targets == held
        out["arm_still_during_drop"] = all(near(s, samples[0], 1e-6) for s in samples)
        out["arm_at_a_during_drop"] = near(samples[-1], TARGET_A)
        out["driver_alive"] = node.loop.alive and node.driver.arm_armed
        sh("ip link set r0 up")
        station.stdin.write("link_up\n")
        station.stdin.flush()
        for _ in range(2):
            out["log"].append(station.stdout.readline().strip())
        with lock:
            out["arm_at_b_after"] = near(fw.joints, TARGET_B)
    stop.set()
    spin.join(2)
    node.destroy_node()
    rclpy.try_shutdown()
    fw_bus.shutdown()


if __name__ == "__main__":
    sys.exit(workstation() if sys.argv[1:2] == ["workstation"] else robot())
