"""Message classes by type name, and QoS between agentchemist.bag's QosProfile and rclpy's."""
import importlib

from rclpy.duration import Duration, Infinite
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from agentchemist.bag.errors import UnknownMessageTypeError
from agentchemist.bag.qos import QosProfile, QosTime

#: rmw's infinite duration as rosbag2 (Jazzy) writes it.
INFINITE = QosTime(9_223_372_036, 854_775_807)


def message_class(msgtype: str, origin="message types", topic: str = ""):
    """The Python class of `package/msg/Name`, or UnknownMessageTypeError saying what is missing."""
    parts = msgtype.split("/")
    if len(parts) != 3 or not all(parts):
        raise UnknownMessageTypeError(origin, msgtype, topic, "not of the form package/msg/Name")
    package, kind, name = parts
    try:
        module = importlib.import_module(f"{package}.{kind}")
    except ImportError:
        raise UnknownMessageTypeError(origin, msgtype, topic, f"the Python package {package!r} is not installed "
                                      "(build and source the workspace that defines it)") from None
    cls = getattr(module, name, None)
    if cls is None:
        raise UnknownMessageTypeError(origin, msgtype, topic, f"package {package!r} has no {kind} {name!r}")
    if not hasattr(cls, "__import_type_support__") and not hasattr(cls, "_TYPE_SUPPORT"):
        raise UnknownMessageTypeError(origin, msgtype, topic, f"{package}.{kind}.{name} is not a ROS message class")
    return cls


def _duration(value: QosTime) -> Duration:
    if value.infinite:
        return Infinite
    return Duration(nanoseconds=value.nanoseconds)


def _time(duration) -> QosTime:
    if duration == Infinite:
        return INFINITE
    ns = int(duration.nanoseconds)
    if ns >= 2**63 - 1:
        return INFINITE
    return QosTime(ns // 1_000_000_000, ns % 1_000_000_000)


def to_rclpy(profile: QosProfile) -> QoSProfile:
    """An rclpy profile from history, depth, reliability and durability (the policies that decide
    matching and latching; deadline/lifespan/liveliness stay at the middleware defaults)."""
    history = HistoryPolicy.KEEP_ALL if profile.history == "keep_all" else HistoryPolicy.KEEP_LAST
    reliability = {"best_effort": ReliabilityPolicy.BEST_EFFORT, "system_default": ReliabilityPolicy.SYSTEM_DEFAULT,
                   "best_available": ReliabilityPolicy.BEST_AVAILABLE}.get(profile.reliability,
                                                                           ReliabilityPolicy.RELIABLE)
    durability = {"transient_local": DurabilityPolicy.TRANSIENT_LOCAL,
                  "system_default": DurabilityPolicy.SYSTEM_DEFAULT,
                  "best_available": DurabilityPolicy.BEST_AVAILABLE}.get(profile.durability, DurabilityPolicy.VOLATILE)
    return QoSProfile(history=history, depth=max(1, profile.depth), reliability=reliability, durability=durability)


def from_rclpy(qos: QoSProfile) -> QosProfile:
    """What a publisher offered (from get_publishers_info_by_topic) as a QosProfile to store."""
    def name(policy, allowed_default):
        text = getattr(policy, "name", str(policy)).lower()
        return text if text else allowed_default

    return QosProfile(history=name(qos.history, "unknown"), depth=int(qos.depth),
                      reliability=name(qos.reliability, "unknown"), durability=name(qos.durability, "unknown"),
                      deadline=_time(qos.deadline), lifespan=_time(qos.lifespan),
                      liveliness=name(qos.liveliness, "unknown"),
                      liveliness_lease_duration=_time(qos.liveliness_lease_duration),
                      avoid_ros_namespace_conventions=bool(qos.avoid_ros_namespace_conventions))
