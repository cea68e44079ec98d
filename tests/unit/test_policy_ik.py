"""Inverse kinematics on the checked-in URDF (pinocchio): reach, limits, refusal, velocity-limited timing."""
import numpy as np
import pytest

pytest.importorskip("pinocchio")

from agentchemist.policy.ik import ArmIK, IKError  # noqa: E402
from agentchemist.policy.primitives import load_poses  # noqa: E402


@pytest.fixture(scope="module")
def right():
    return ArmIK("right")


def test_ik_reaches_a_shifted_station_from_its_named_pose(right):
    pose = np.array(load_poses().pose("right", "pipette"))
    target = right.fk(pose) + np.array([0.03, -0.02, 0.01])   # the pipette stands 3 cm further, 2 cm aside
    q = right.solve(target, seed=pose)
    assert np.linalg.norm(right.fk(q) - target) <= 1e-3
    assert np.all(q >= right.lower) and np.all(q <= right.upper)
    assert np.abs(q - pose).max() < 0.5                        # the same branch as the taught pose
    assert right.move_duration(pose, q) == pytest.approx(np.abs(q - pose).max() / 1.5)


def test_ik_refuses_an_unreachable_target(right):
    with pytest.raises(IKError, match="no pose within the joint limits"):
        right.solve([3.0, 0.0, 0.5], seed=np.zeros(6))
    with pytest.raises(IKError, match="finite"):
        right.solve([np.nan, 0.0, 0.0], seed=np.zeros(6))
