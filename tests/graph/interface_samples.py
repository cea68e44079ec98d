"""One fully populated instance of every custom message type, and a field-by-field comparison.

Used by the cross-process test: a publisher process sends these, a subscriber process checks them.
"""
import array
import math

from agentchemist_interfaces.msg import (AgentMessage, Anomaly, AudioChunk, AudioEvent, ChemicalReading,
                                         ExperimentPlan, FsmState, FusedRecord, QuantityEstimate, SceneObject)
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, Quaternion
from std_msgs.msg import Header

T = Time(sec=1234, nanosec=567_000_000)


def samples() -> dict:
    pose = Pose(position=Point(x=0.1, y=-0.2, z=0.3), orientation=Quaternion(x=0.0, y=0.0, z=0.7071, w=0.7071))
    return {
        "AgentMessage": AgentMessage(stamp=T, experiment_id="exp-1", sender="vision_supervisor",
                                     receiver="action_policy", subtask_id="t1", instruction="grasp the pipette",
                                     target_state="pipette_grasped", symbol="grasp_ok", payload_json='{"k": 1}'),
        "ExperimentPlan": ExperimentPlan(stamp=T, experiment_id="exp-1", instruction="titrate 25 mL of 0.1 M HCl",
                                         plan_json='{"state_machine": {}}'),
        "FsmState": FsmState(stamp=T, experiment_id="exp-1", state="titrating", previous_state="waiting_ph",
                             symbol="ph_stable", subtask_id="t4", accepting=False, terminal=False),
        "ChemicalReading": ChemicalReading(header=Header(stamp=T, frame_id="ph_meter"), experiment_id="exp-1",
                                           sensor="ph_meter", quantity="pH", value=7.01, unit="pH",
                                           self_check_ok=True, noise=0.005),
        "QuantityEstimate": QuantityEstimate(stamp=T, experiment_id="exp-1", quantity="titrant_volume", unit="mL",
                                             channel="audio", value=1.40625, delta=0.046875, confidence=0.93,
                                             fsm_state="titrating", subtask_id="t4", event_id="ev-30"),
        "AudioChunk": AudioChunk(header=Header(stamp=T, frame_id="right_gripper_mic"), sample_rate=48000,
                                 channels=1, data=array.array("h", [0, 1, -1, 32767, -32768, 12])),
        "AudioEvent": AudioEvent(stamp=T, experiment_id="exp-1", event_id="ev-30", kind="droplet",
                                 classification="expected", start=T, end=Time(sec=1234, nanosec=600_000_000),
                                 snr_db=21.5, peak_frequency_hz=2800.0, quantity=0.046875, confidence=0.9,
                                 symbol="drop", source="right_gripper"),
        "Anomaly": Anomaly(stamp=T, experiment_id="exp-1", source="dispenser_controller", kind="gripper_stall",
                           severity="warn", description="stalled", fsm_state="titrating", subtask_id="t4",
                           response="retry", resolved=True),
        "FusedRecord": FusedRecord(stamp=T, experiment_id="exp-1", seq=42, quantity="titrant_volume", unit="mL",
                                   value=1.4, confidence=0.91, channels=["statistical", "audio"],
                                   channel_values=[1.39, 1.41], channel_confidences=[0.9, 0.92],
                                   fsm_state="titrating", subtask_id="t4", quality_flags=["divergence"]),
        "SceneObject": SceneObject(id="beaker_1", kind="beaker", u=160.0, v=120.5, width=40.0, height=60.0,
                                   pose=pose, confidence=0.8),
    }


def same(a, b, path="") -> list[str]:
    """Differences between two ROS messages, recursively ('' when equal)."""
    diffs = []
    if hasattr(a, "get_fields_and_field_types"):
        for name in a.get_fields_and_field_types():
            diffs += same(getattr(a, name), getattr(b, name), f"{path}.{name}")
        return diffs
    if isinstance(a, (list, tuple, array.array)) or type(a).__name__ == "ndarray":
        a, b = list(a), list(b)
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        for i, (x, y) in enumerate(zip(a, b)):
            diffs += same(x, y, f"{path}[{i}]")
        return diffs
    if isinstance(a, float):
        return [] if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12) else [f"{path}: {a} != {b}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]
