"""Every anomaly kind an agent reports, and the three severities, as enums (docs/anomalies.md says when each
is raised and what follows).

Both are ``StrEnum``: a member equals its string, so Anomaly messages, the store and recorded bags keep
the same text. tests/unit/test_contracts_anomalies.py finds the kinds the code reports and the ones the
page documents and fails on any that is not a member here.
"""
from __future__ import annotations

from enum import StrEnum

__all__ = ["AnomalyKind", "Severity", "anomaly_kind"]


class Severity(StrEnum):
    INFO = "info"    #: a notice, or a resolution (with resolved=True)
    WARN = "warn"    #: handled, the run goes on
    HALT = "halt"    #: the run stops


class AnomalyKind(StrEnum):
    # ---- vision supervisor (the executor)
    INVALID_PLAN = "invalid_plan"
    SCENE_UNAVAILABLE = "scene_unavailable"
    PRECONDITION_FAILED = "precondition_failed"
    CALIBRATION_REQUIRED = "calibration_required"
    AGENT_UNAVAILABLE = "agent_unavailable"
    SUBTASK_REFUSED = "subtask_refused"
    SUBTASK_FAILED = "subtask_failed"
    BALANCE_UNAVAILABLE = "balance_unavailable"
    TARE_FAILED = "tare_failed"
    DISPENSE_FAILED = "dispense_failed"
    ENDPOINT_NOT_REACHED = "endpoint_not_reached"
    ENDPOINT_NOT_VERIFIED = "endpoint_not_verified"
    MASS_OUT_OF_TOLERANCE = "mass_out_of_tolerance"
    STATE_TIMEOUT = "state_timeout"
    REAGENT_MISMATCH = "reagent_mismatch"
    CLOCK_JUMP = "clock_jump"
    LABWARE_MISSING = "labware_missing"
    LABWARE_MOVED = "labware_moved"
    PH_STUCK = "ph_stuck"
    CAMERA_STALE = "camera_stale"
    UNEXPECTED_COLOUR = "unexpected_colour"
    BAD_IMAGE = "bad_image"
    COLOUR_UNREADABLE = "colour_unreadable"
    BAD_READING = "bad_reading"
    RECORDER_UNAVAILABLE = "recorder_unavailable"
    RECORDER_LOST = "recorder_lost"
    RECORD_GAP = "record_gap"
    NODE_LOST = "node_lost"
    #: fallbacks of a report / an abort without a kind (docs/anomalies.md: no code path produces them today)
    VISION = "vision"
    ABORT = "abort"
    # ---- dispenser controller (drops, solid pour, calibration, goals)
    NO_DROP = "no_drop"
    GRIPPER_STALL = "gripper_stall"
    SENSOR_TIMEOUT = "sensor_timeout"
    PIPETTE_EMPTY = "pipette_empty"
    SETTLE_TIMEOUT = "settle_timeout"
    OPERATION_TIMEOUT = "operation_timeout"
    UNEXPECTED_DROP = "unexpected_drop"
    NOT_READY = "not_ready"
    ARM_OFF_POSE = "arm_off_pose"
    ARM_STALL = "arm_stall"
    NO_FLOW = "no_flow"
    CALIBRATION_FAILED = "calibration_failed"
    BAD_GOAL = "bad_goal"
    # ---- audio supervisor
    AUDIO_NOISE = "audio_noise"
    DROP_TIMEOUT = "drop_timeout"
    BAD_AUDIO = "bad_audio"
    # ---- recorder and its store
    DISK_FULL = "disk_full"
    DATABASE_LOCKED = "database_locked"
    IO_ERROR = "io_error"
    WRITE_FAILED = "write_failed"
    CONNECTION_LOST = "connection_lost"
    SPILL_FAILED = "spill_failed"
    SPILL_UNREPLAYED = "spill_unreplayed"
    IMPLAUSIBLE_READING = "implausible_reading"
    STORE_DAMAGED = "store_damaged"
    # ---- every node, the summarizer
    NODE_ERROR = "node_error"
    REPORT_FAILED = "report_failed"
    # ---- every node's boundary (contracts/admission.py) and the plan gate: refused at entry, never a halt
    FUTURE_STAMP = "future_stamp"
    UNKNOWN_SENSOR = "unknown_sensor"
    OVERSIZED_MESSAGE = "oversized_message"
    MALFORMED_MESSAGE = "malformed_message"
    HALT_REFUSED = "halt_refused"
    PLAN_REFUSED = "plan_refused"
    #: a person stopping the run (source "operator"): the one halt from outside the agents
    OPERATOR_STOP = "operator_stop"
    #: a person's pause (warn) and resume (info, resolved) through the supervisor's pause service (fsm/operator.py)
    OPERATOR_PAUSE = "operator_pause"
    # ---- piper driver: "piper_" + the driver's event kind (hardware/piper/driver.py)
    PIPER_FEEDBACK_TIMEOUT = "piper_feedback_timeout"
    PIPER_ARM_STATUS = "piper_arm_status"
    PIPER_JOINT_LIMIT = "piper_joint_limit"
    PIPER_JOINT_COMMUNICATION = "piper_joint_communication"
    PIPER_OVER_TEMPERATURE = "piper_over_temperature"
    PIPER_DRIVER_FAULT = "piper_driver_fault"
    PIPER_GRIPPER_ERROR = "piper_gripper_error"
    PIPER_GRIPPER_STUCK = "piper_gripper_stuck"
    PIPER_EMERGENCY_STOP = "piper_emergency_stop"
    PIPER_NOT_IN_CAN_MODE = "piper_not_in_can_mode"
    PIPER_COMMAND_REJECTED = "piper_command_rejected"
    PIPER_CLAMPED = "piper_clamped"
    PIPER_BUS_ERROR = "piper_bus_error"
    PIPER_MALFORMED_FRAME = "piper_malformed_frame"
    # ---- serial instrument drivers (pH meter, balance)
    INSTRUMENT_DISCONNECTED = "instrument_disconnected"
    MALFORMED_INPUT = "malformed_input"
    READING_FLAGGED = "reading_flagged"


def anomaly_kind(text: str) -> AnomalyKind:
    """The AnomalyKind named ``text``; ValueError naming the known ones for anything else."""
    try:
        return AnomalyKind(text)
    except ValueError:
        raise ValueError(f"unknown anomaly kind {text!r}; known: {', '.join(k.value for k in AnomalyKind)}") \
            from None
