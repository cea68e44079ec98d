"""action_policy times a motion step from the first reading of a started clock (common/step_wait.py): a goal
taken before the node's first /clock (sim time reads 0) must not time out when /clock jumps to the twin's
time, the failure twin.launch.py showed through the real `ros2 launch`."""
from agentchemist_ros.common.step_wait import StepWait

TIMEOUT_S = 8.0


def test_a_wait_begun_before_the_clock_started_is_timed_from_the_first_started_reading():
    wait = StepWait("open", 0.0, None)          # goal taken before the first /clock
    assert wait.elapsed(0.0) == 0.0
    assert wait.elapsed(54.35) == 0.0 <= TIMEOUT_S   # the first /clock: the twin was at 54 s
    assert wait.elapsed(55.0) == 55.0 - 54.35


def test_a_wait_begun_on_a_running_clock_is_timed_from_then():
    wait = StepWait("open", 25.95, None)
    assert wait.elapsed(26.25) == 26.25 - 25.95
    assert wait.elapsed(34.0) > TIMEOUT_S
