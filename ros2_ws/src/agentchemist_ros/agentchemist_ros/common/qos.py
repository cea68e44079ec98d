"""QoS profiles chosen on purpose (DESIGN.md conventions)."""
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy,
                       qos_profile_sensor_data)

#: plan, FSM state and reports: late joiners get the last value.
LATCHED = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: records, anomalies, agent messages, quantity estimates: nothing may be dropped.
RELIABLE = QoSProfile(depth=500, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)
#: camera, audio and instrument streams.
SENSOR = qos_profile_sensor_data
#: instrument readings are few and each one matters to the recorder: reliable, but shallow.
READINGS = QoSProfile(depth=50, history=HistoryPolicy.KEEP_LAST,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)
#: audio: reliable within the process so that drops are not lost at high real-time factors.
AUDIO = QoSProfile(depth=200, history=HistoryPolicy.KEEP_LAST,
                   reliability=ReliabilityPolicy.RELIABLE,
                   durability=DurabilityPolicy.VOLATILE)
#: FSM state: latched for late joiners, and deep enough that a burst of transitions is never
#: overwritten before a reliable subscriber (the recorder) has it.
FSM = QoSProfile(depth=100, history=HistoryPolicy.KEEP_LAST,
                 reliability=ReliabilityPolicy.RELIABLE,
                 durability=DurabilityPolicy.TRANSIENT_LOCAL)

#: peer waits (PeerWait): each node's last word latched (publish with LATCHED); the twin's subscription is
#: deep enough that the words of several nodes arriving together are all kept.
PEER_WAITS = QoSProfile(depth=50, history=HistoryPolicy.KEEP_LAST,
                        reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)
