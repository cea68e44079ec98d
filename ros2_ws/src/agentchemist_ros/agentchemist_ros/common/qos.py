"""QoS profiles chosen on purpose (DESIGN.md conventions)."""
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)


def _reliable(depth: int, *, latched: bool = False) -> QoSProfile:
    """Reliable, keeping the last ``depth`` messages; ``latched``: late joiners get them (transient local)."""
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


#: plan, FSM state and reports: late joiners get the last value.
LATCHED = _reliable(1, latched=True)
#: records, anomalies, agent messages, quantity estimates: nothing may be dropped.
RELIABLE = _reliable(500)
#: the recorder's anomaly subscription: a burst (1000/s from a failing node) is kept whole while each one is
#: made durable (500 deep lost half of such a burst, issue 38).
ANOMALY_LOG = _reliable(5000)
#: camera, audio and instrument streams.
SENSOR = qos_profile_sensor_data
#: instrument readings are few and each one matters to the recorder: reliable, but shallow.
READINGS = _reliable(50)
#: audio: reliable within the process so that drops are not lost at high real-time factors.
AUDIO = _reliable(200)
#: FSM state: latched for late joiners, and deep enough that a burst of transitions is never
#: overwritten before a reliable subscriber (the recorder) has it.
FSM = _reliable(100, latched=True)

#: peer waits (PeerWait): each node's last word latched (publish with LATCHED); the twin's subscription is
#: deep enough that the words of several nodes arriving together are all kept.
PEER_WAITS = _reliable(50, latched=True)
