"""lab_sim on its own: /clock ahead of the wall clock, readings, clamped commands, fault injection by
service (refused with a reason when unknown), and the Gazebo switches."""
import json
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from agentchemist_interfaces.msg import ChemicalReading  # noqa: E402
from agentchemist_interfaces.srv import InjectFault  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import READINGS  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.lab_sim_node import LabSimNode  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import before_marker  # noqa: E402

SCENARIO = str(REPO / "config" / "scenarios" / "hcl_naoh.yaml")


def spin_for(executor, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)


def spin_until(executor, condition, seconds):
    """Spin until `condition` holds or `seconds` of wall time pass; its last value."""
    end = time.monotonic() + seconds
    while not condition() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.02)
    return bool(condition())


@pytest.fixture
def ros():
    rclpy.init()
    yield
    rclpy.try_shutdown()


def test_clock_readings_and_fault_injection(ros):
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=20.0)])
    probe = Node("lab_probe")
    clocks, readings = [], []
    probe.create_subscription(Clock, "/clock", lambda m: clocks.append(m.clock.sec + m.clock.nanosec * 1e-9), 10)
    probe.create_subscription(ChemicalReading, topics.PH_READING,
                              lambda m: readings.append((m.header.stamp.sec + m.header.stamp.nanosec * 1e-9,
                                                         m.quantity, m.value)), READINGS)
    client = probe.create_client(InjectFault, "/lab_sim/inject_fault")
    executor = make_executor()
    executor.add_node(sim)
    executor.add_node(probe)
    wall = time.monotonic()
    spin_for(executor, 1.5)
    elapsed = time.monotonic() - wall
    assert clocks and clocks[-1] - 1.0 > 2.0 * elapsed, "sim time should run well ahead of the wall clock"
    ph = [v for _, q, v in readings if q == "pH"]
    assert ph and all(0.9 < v < 1.3 for v in ph)   # 0.1 M HCl (activity pH about 1.1)

    future = client.call_async(InjectFault.Request(kind="no_such_fault", duration_s=1.0, params_json="{}"))
    while not future.done():
        executor.spin_once(timeout_sec=0.02)
    assert not future.result().success and "refused" in future.result().message

    future = client.call_async(InjectFault.Request(kind="ph_dropout", duration_s=3.0, params_json="{}"))
    while not future.done():
        executor.spin_once(timeout_sec=0.02)
    assert future.result().success, future.result().message
    t_fault = sim.t
    readings.clear()
    # the marker: the first pH reading after the 3 s dropout, from the same publisher as any reading
    # during it (so those would have arrived first)
    before = before_marker(readings, lambda: None, lambda r: r[1] == "pH" and r[0] > t_fault + 3.2,
                           seconds=30.0, wait=lambda cond, s: spin_until(executor, cond, s))
    during = [t for t, q, _ in before if q == "pH" and t_fault + 0.2 < t < t_fault + 2.8]
    assert during == [], "the pH meter must be silent during a dropout"
    for n in (sim, probe):
        n.destroy_node()


def test_gripper_command_out_of_range_is_clamped(ros):
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO)])
    probe = Node("grip_probe")
    pub = probe.create_publisher(Float64MultiArray, topics.gripper_command_topic("right"), 10)
    executor = make_executor()
    executor.add_node(sim)
    executor.add_node(probe)
    spin_for(executor, 0.3)
    pub.publish(Float64MultiArray(data=[0.5]))  # 500 mm: beyond the Piper's 70 mm
    spin_for(executor, 1.0)
    assert sim.twin.gripper_opening_m("right") <= 0.0701
    for n in (sim, probe):
        n.destroy_node()


def test_beside_gazebo_follows_the_external_clock(ros):
    with pytest.raises(ValueError, match="use_sim_time"):
        LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO), Parameter("publish_clock", value=False)])
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("publish_clock", value=False),
                                          Parameter("publish_joint_states", value=False),
                                          Parameter("use_sim_time", value=True)])
    probe = Node("gz_probe")
    clocks = []
    probe.create_subscription(Clock, "/clock", lambda m: clocks.append(m), 10)
    gazebo = probe.create_publisher(Clock, "/clock", 10)
    executor = make_executor()
    executor.add_node(sim)
    executor.add_node(probe)
    for k in range(1, 31):  # "Gazebo" advances its clock to 4.0 s
        gazebo.publish(Clock(clock=Time(sec=1 + k // 10, nanosec=(k % 10) * 100_000_000)))
        spin_for(executor, 0.02)
    assert spin_until(executor, lambda: sim.t >= 3.89, 10.0), sim.t
    # the marker: Gazebo's last tick (4 s + 1 ns), published in this process after lab_sim has followed the
    # clock to 4 s: a /clock of lab_sim's own would be ahead of it
    before = before_marker(clocks, lambda: gazebo.publish(Clock(clock=Time(sec=4, nanosec=1))),
                           lambda m: (m.clock.sec, m.clock.nanosec) == (4, 1),
                           wait=lambda cond, s: spin_until(executor, cond, s))
    assert all(m.clock.sec <= 4 for m in before), "lab_sim must not publish its own /clock"
    assert sim.t == pytest.approx(4.0, abs=0.11)
    assert json.loads(json.dumps(sim.twin.truth_summary(), default=float))["t"] == pytest.approx(sim.t)
    for n in (sim, probe):
        n.destroy_node()


def test_a_held_tick_goes_out_when_the_controller_answers(ros):
    """While a controller streams gripper commands each tick waits for its answer; the tick goes out when
    the answer arrives, not at the timer's next period (which halved the twin's pace). The timer here is
    50 s of wall time, so every tick below is one the test or an answer caused."""
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO),
                                          Parameter("real_time_factor", value=0.001)])
    probe = Node("answer_probe")
    pub = probe.create_publisher(Float64MultiArray, topics.gripper_command_topic(sim.pipette_side), 10)
    executor = make_executor()
    executor.add_node(sim)
    executor.add_node(probe)
    assert spin_until(executor, lambda: pub.get_subscription_count() > 0, 10.0)
    period = sim.config.clock_period
    for _ in range(4):  # a controller that answers every tick: streaming from now on
        sim.tick()
        sim.on_gripper(sim.pipette_side, Float64MultiArray(data=[0.03]))
    t0 = sim.t
    sim.tick()  # goes out; its answer is awaited
    assert sim.t == pytest.approx(t0 + period)
    sim.tick()  # the timer's next period comes before the answer: held
    assert sim.held and sim.t == pytest.approx(t0 + period)
    pub.publish(Float64MultiArray(data=[0.03]))  # the answer, through DDS
    assert spin_until(executor, lambda: sim.t > t0 + 1.5 * period, 10.0), "the held tick did not go out"
    assert sim.t == pytest.approx(t0 + 2 * period) and not sim.held
    for n in (sim, probe):
        n.destroy_node()
def test_free_run_waits_for_a_controller_on_a_sim_time_timer(ros):
    """The dispenser answers from a timer on the twin's clock, and the executor's timers come from another
    thread: in free run the next tick used to go out before that timer fired, every answer came a tick
    late, the twin never saw a stream and the controller skipped periods (a Ca/EDTA dispense took 57 s of
    sim time to its first drop instead of 22). Now each step of such a controller is computed at the
    twin's current time, one per tick."""
    from rclpy.time_source import TimeSource
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO), Parameter("free_run", value=True),
                                          Parameter("free_run_look_s", value=0.1)])
    controller = Node("timer_controller")
    clock_node = Node("sim_clock_for_test")
    source = TimeSource(node=clock_node)
    source.ros_time_is_active = True
    source.attach_clock(controller.get_clock())
    pub = controller.create_publisher(Float64MultiArray, topics.gripper_command_topic(sim.pipette_side), 10)
    steps = []  # (the controller's time, the twin's time) at each step

    def step():
        now = controller.get_clock().now().nanoseconds * 1e-9
        steps.append((now, sim.t))
        pub.publish(Float64MultiArray(data=[0.06]))

    controller.create_timer(sim.config.clock_period, step)
    executor = make_executor()
    for n in (sim, controller, clock_node):
        executor.add_node(n)
    assert spin_until(executor, lambda: len(steps) >= 200, 30.0), len(steps)
    late = [(c, t) for c, t in steps[5:] if abs(c - t) > 1e-6]
    assert late == [], late[:5]  # every step at the twin's own time: the tick waited for it
    covered = (steps[-1][0] - steps[5][0]) / sim.config.clock_period
    assert len(steps) - 6 == pytest.approx(covered, abs=1), "the controller skipped periods"
    for n in (sim, controller, clock_node):
        n.destroy_node()


def test_free_run_ticks_behind_its_messages_and_waits_for_the_controller(ros):
    """free_run (batch runs): no pace, each tick queued on the executor behind the messages it published, so
    a node in the twin's process reads every reading before the twin moves on, however fast it runs; a
    controller that streams answers is still waited for, tick by tick, and a silent one only until the
    lock-step's wall timeout. The looks at held ticks are 0.1 s of wall time apart here, so the twin's
    progress below is the free run's (the timer alone would make 0.5 s of sim time per wall second)."""
    sim = LabSimNode(parameter_overrides=[Parameter("scenario", value=SCENARIO), Parameter("free_run", value=True),
                                          Parameter("free_run_look_s", value=0.1)])
    probe = Node("free_run_probe")
    lag = []  # twin time minus the reading's stamp, when the probe reads it
    probe.create_subscription(ChemicalReading, topics.PH_READING, lambda m: lag.append(
        sim.t - (m.header.stamp.sec + m.header.stamp.nanosec * 1e-9)), READINGS)
    answering = [True]
    pub = probe.create_publisher(Float64MultiArray, topics.gripper_command_topic(sim.pipette_side), 10)
    answered = []  # (tick answered, how far the twin was past it when answered), s

    def answer(m):
        if answering[0]:
            tick = m.clock.sec + m.clock.nanosec * 1e-9
            answered.append((tick, sim.t - tick))
            pub.publish(Float64MultiArray(data=[0.06]))

    probe.create_subscription(Clock, "/clock", answer, 10)
    executor = make_executor()
    executor.add_node(sim)
    executor.add_node(probe)
    t0 = sim.t
    assert spin_until(executor, lambda: sim.t > t0 + 20.0, 15.0), f"free run reached {sim.t - t0:.1f} s of sim time"
    assert len(lag) >= 150 and max(lag) < 1e-9, max(lag)  # every reading read at its own tick
    # streaming: the twin is never more than the lock-step's streaming lead (one tick in free run) past a tick
    # when its answer is made; on a starved machine that one tick is used now and then (it was in 1 of 400)
    period = sim.config.clock_period
    assert max(ahead for _, ahead in answered) <= sim.lockstep.streaming_ticks * period + 1e-9, answered
    assert sim.lockstep.streak >= 3
    answering[0] = False  # the controller falls silent: the twin waits for it up to the timeout, then runs on
    moves, last = [time.monotonic()], [sim.t]

    def moved_three_times():
        if sim.t != last[0]:
            last[0] = sim.t
            moves.append(time.monotonic())
        return len(moves) > 3

    assert spin_until(executor, moved_three_times, 10.0), "a silent controller stalled the twin"
    longest = max(b - a for a, b in zip(moves, moves[1:]))
    assert longest >= sim.config.lockstep_timeout_s - 0.05, longest  # it was waited for
    for n in (sim, probe):
        n.destroy_node()


