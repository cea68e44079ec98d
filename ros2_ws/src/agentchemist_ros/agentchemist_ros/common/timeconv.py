"""builtin_interfaces/Time <-> float seconds. Core objects take `now` as float seconds."""
from builtin_interfaces.msg import Time


def to_sec(stamp) -> float:
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def to_msg(seconds: float) -> Time:
    if seconds != seconds or seconds < 0:  # NaN or negative: stamp zero rather than crash
        seconds = 0.0
    sec = int(seconds)
    nanosec = int(round((seconds - sec) * 1e9))
    if nanosec >= 1_000_000_000:
        sec, nanosec = sec + 1, nanosec - 1_000_000_000
    return Time(sec=sec, nanosec=nanosec)


def node_now(node) -> float:
    """The node's ROS clock (sim time when use_sim_time) in seconds."""
    return node.get_clock().now().nanoseconds * 1e-9


def calendar_now() -> str:
    """The wall-clock time as ISO 8601 with its zone (UTC), for records dated beside the (maybe simulated)
    ROS clock. The node reads it; the core never reads a clock."""
    from datetime import datetime, timezone
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
