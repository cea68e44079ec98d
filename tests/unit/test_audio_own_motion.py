"""A gripper's own motor, heard by its microphone while it moves, is an expected sound; a droplet never is."""
import pytest

from agentchemist.perception.audio.context import DropContext
from agentchemist.perception.audio.events import DetectedEvent
from agentchemist.perception.audio.own_motion import GripperMotion


def _event(kind, onset):
    return DetectedEvent(event_id=f"e{onset}", start=onset, end=onset + 0.2, onset=onset, kind=kind, margin=0.8,
                         snr_db=20.0, peak_frequency_hz=800.0, decay_s=0.05, confidence=0.9)


def _carry():
    """Joint states at 10 Hz: still until 1.0 s, closing 40 mm in 1 s, still again."""
    motion = GripperMotion(min_speed_m_s=0.001, margin_s=0.3)
    for k in range(40):
        t = k / 10
        pos = 0.070 - 0.040 * min(max(t - 1.0, 0.0), 1.0)
        motion.update(t, pos)
    return motion


def test_motion_intervals_from_joint_states():
    motion = _carry()
    assert not motion.covers(0.5) and motion.covers(0.75) and motion.covers(1.5) and motion.covers(2.3)
    assert not motion.covers(2.5) and not motion.covers(3.5)


def test_a_slow_squeeze_is_not_motion_and_bad_samples_are_ignored():
    motion = GripperMotion(min_speed_m_s=0.001)
    for k in range(30):  # 0.1 mm/s, the dispenser's fine rate
        motion.update(k / 10, 0.030 - 0.0001 * k / 10)
    motion.update(3.0, float("nan"))
    motion.update(1.0, 0.0)  # back in time
    assert not motion.covers(1.5)
    with pytest.raises(ValueError):
        GripperMotion(min_speed_m_s=float("nan"))


def test_own_motor_sounds_are_expected_but_droplets_are_not():
    context = DropContext()
    context.set_expectation(active=False, subtask_id="carry", fsm_state="tared", expected_interval_s=None, now=0.0)
    motor = context.classify(_event("noise", 1.5), own_motion=True)
    assert motor.classification == "expected" and "own motor" in motor.reason and motor.quantity_ml == 0.0
    assert context.classify(_event("contact", 1.6), own_motion=True).classification == "expected"
    assert context.classify(_event("noise", 5.0), own_motion=False).classification == "anomalous"
    drop = context.classify(_event("droplet", 1.7), own_motion=True)
    assert drop.classification == "anomalous" and drop.drops == 0
