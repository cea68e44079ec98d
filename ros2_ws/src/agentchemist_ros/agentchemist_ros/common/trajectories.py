"""JointTrajectory messages for one Piper arm (the arm controllers' command topic)."""
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint


def arm_point(side: str, positions, duration_s: float) -> JointTrajectory:
    """One point for the arm's six joints (`<side>_joint1..6`, rad), reached `duration_s` after it is received."""
    point = JointTrajectoryPoint(positions=[float(v) for v in positions], time_from_start=Duration(
        sec=int(duration_s), nanosec=int(round((duration_s % 1) * 1e9)) % 1000000000))
    return JointTrajectory(joint_names=[f"{side}_joint{i}" for i in range(1, 7)], points=[point])
