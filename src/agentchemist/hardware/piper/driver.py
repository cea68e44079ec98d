"""Driver logic of one Piper arm over any python-can bus: CAN feedback -> joint state, commands -> frames.

It follows the piper_driver contract of docs/robot.md:

- the joint state has every joint: ``<side>_joint1..6`` in rad and ``<side>_gripper`` (the opening, m);
- commands are clamped to the Piper SDK's software limits (the bench description's,
  ``agentchemist.bench.robot``; the twin clamps to the same) and each joint that starts being clamped
  is reported;
- commands are not acted on until trustworthy: the arm stays still (no joint frames at all) until a
  commanded arm position is within ``hold_tolerance_rad`` of the measured one, and the gripper stays
  still until a gripper command differs from the first one seen (ros2_control's startup value). Losing
  feedback re-arms this hold, since the commands may then no longer match where the arm is;
- start-up: enable the motors and enter CAN command mode (MOVE J), repeated until the arm's status frame
  confirms it; nothing that moves the arm is sent before that;
- a command with a non-finite value is refused whole (nothing sent), with an error;
- feedback older than ``feedback_timeout_s`` (a dead bus, an unpowered arm) is reported and motion
  frames stop until fresh feedback returns.

Time is the caller's ``now`` (seconds, any monotonic clock); nothing here reads a clock or sleeps.
Problems and state changes come out as :class:`DriverEvent` (``drain_events``), once when a condition
starts and once when it clears, so a 200 Hz stream of the same bad command does not flood the anomaly topic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import can

from agentchemist.bench.robot import ARM_JOINT_LIMITS_RAD, ARM_JOINTS, GRIPPER_RANGE_M, check_side
from agentchemist.hardware.piper import codec
from agentchemist.params import param


@dataclass(frozen=True)
class DriverConfig:
    """The driver's settings; the fields made with param() are also the piper_driver node's parameters."""
    side: str = param("left", choices=("left", "right"),
                      description="Arm this driver runs: left | right (joints <side>_joint1..6, <side>_gripper)")
    # 20 periods of the Piper's ~200 Hz feedback
    feedback_timeout_s: float = param(0.1, unit="s", low=0.01, high=5.0,
                                      description="Feedback older than this is a dead bus: reported, motion "
                                                  "frames stop")
    hold_tolerance_rad: float = param(0.05, unit="rad", low=0.001, high=0.5,
                                      description="Startup hold: arm commands move the arm only once one is within "
                                                  "this of the measured position on every joint")
    speed_percent: int = param(50, unit="%", low=1, high=100, description="MOVE J speed sent to the arm")
    gripper_effort_nm: float = param(1.0, unit="N m", low=0.0, high=codec.GRIPPER_EFFORT_MAX / 1000.0,
                                     description="Gripper force limit sent with each gripper command")
    mode_retry_s: float = param(0.5, unit="s", low=0.05, high=10.0,
                                description="Re-send motor enable + CAN command mode this often until the arm's "
                                            "status confirms it")
    gripper_startup_eps_m: float = 1e-6  # a gripper command this close to the startup value is "unchanged"

    def __post_init__(self):
        check_side(self.side)
        if not 0 < self.feedback_timeout_s:
            raise ValueError("feedback_timeout_s must be > 0")
        if not 0 < self.hold_tolerance_rad:
            raise ValueError("hold_tolerance_rad must be > 0")
        if not 1 <= int(self.speed_percent) <= 100:
            raise ValueError("speed_percent must be 1..100")
        if not 0 <= self.gripper_effort_nm <= codec.GRIPPER_EFFORT_MAX / 1000.0:
            raise ValueError("gripper_effort_nm must be 0..5")
        if not 0 < self.mode_retry_s:
            raise ValueError("mode_retry_s must be > 0")

    @property
    def joint_names(self) -> tuple[str, ...]:
        return tuple(f"{self.side}_joint{i}" for i in range(1, 7)) + (f"{self.side}_gripper",)


@dataclass(frozen=True)
class DriverEvent:
    kind: str           # clamped, command_rejected, feedback_timeout, holding, tracking, arm_status, bus_error ...
    severity: str       # info | warn | halt (the Anomaly message's severities)
    description: str
    resolved: bool = False


@dataclass(frozen=True)
class JointStateReading:
    names: tuple[str, ...]
    positions: tuple[float, ...]     # rad for the 6 arm joints, m for the gripper opening
    stamp: float                     # `now` of the newest feedback frame in it


@dataclass(frozen=True)
class CommandResult:
    accepted: bool
    error: str = ""
    clamped: tuple[str, ...] = ()


class PiperDriver:
    def __init__(self, bus: can.BusABC, config: DriverConfig | None = None):
        self.bus = bus
        self.config = config or DriverConfig()
        self.names = self.config.joint_names
        self._arm_mdeg: list[int | None] = [None] * ARM_JOINTS
        self._gripper_um: int | None = None
        self._seen: dict[int, float] = {}           # frame id -> `now` it last arrived
        self.status: codec.ArmStatus | None = None
        self.gripper_feedback: codec.GripperFeedback | None = None
        self._arm_target: tuple[float, ...] | None = None
        self._gripper_target: float | None = None
        self._gripper_startup: float | None = None
        self.arm_armed = False
        self.gripper_armed = False
        self._started_at: float | None = None
        self._last_mode_sent: float | None = None
        self._active: set[str] = set()              # conditions reported and not yet cleared
        self._clamping: set[str] = set()
        self._events: list[DriverEvent] = []
        self.frames_sent = 0

    # ------------------------------------------------------------------------------------ lifecycle
    def start(self, now: float) -> None:
        """Enable the motors and ask for CAN command mode (repeated by step() until the arm confirms it)."""
        self._started_at = now
        self._send_mode(now)

    def _send_mode(self, now: float) -> None:
        self._last_mode_sent = now
        self._send(codec.encode_motor_enable(codec.MotorEnable(codec.MOTOR_ALL, True)))
        self._send(codec.encode_mode(codec.ModeCommand(codec.CTRL_CAN, codec.MOVE_J,
                                                       int(self.config.speed_percent))))

    @property
    def in_can_mode(self) -> bool:
        return (self.status is not None and self.status.ctrl_mode == codec.CTRL_CAN
                and self.status.move_mode == codec.MOVE_J)

    # ------------------------------------------------------------------------------------ feedback
    def poll(self, now: float) -> int:
        """Read every frame waiting on the bus; return how many were feedback this driver used."""
        used = 0
        while True:
            try:
                msg = self.bus.recv(timeout=0)
            except can.CanError as exc:
                self._raise("bus_error", "warn", f"reading the CAN bus failed: {exc}")
                return used
            if msg is None:
                return used
            used += self.on_frame(msg, now)

    def on_frame(self, msg: can.Message, now: float) -> bool:
        """Take one received frame; frames that are not Piper feedback (other devices, our own) are ignored."""
        if msg.arbitration_id not in codec.FEEDBACK_IDS:
            return False
        try:
            record = codec.decode(msg)
        except codec.FrameError as exc:
            self._raise("malformed_frame", "warn", f"malformed feedback frame ignored: {exc}")
            return False
        if msg.arbitration_id in codec.JOINT_FEEDBACK_IDS:
            i = record.first - 1
            self._arm_mdeg[i], self._arm_mdeg[i + 1] = record.a_mdeg, record.b_mdeg
        elif msg.arbitration_id == codec.GRIPPER_FEEDBACK_ID:
            self.gripper_feedback = record
            self._gripper_um = record.opening_um
        else:
            self._on_status(record)
        self._seen[msg.arbitration_id] = now
        return True

    def _on_status(self, status: codec.ArmStatus) -> None:
        self.status = status
        if status.arm_status == codec.ARM_NORMAL:
            self._clear("arm_status", "arm status back to normal")
        else:
            self._raise("arm_status", "halt" if status.arm_status == codec.ARM_EMERGENCY_STOP else "warn",
                        f"arm reports {status.describe()} (error code 0x{status.err_code:04X})")

    def measured(self) -> tuple[float, ...] | None:
        """The 7 joint values (rad, rad, ..., m), or None until every joint has been heard from."""
        if any(v is None for v in self._arm_mdeg) or self._gripper_um is None:
            return None
        return tuple(codec.mdeg_to_rad(v) for v in self._arm_mdeg) + (codec.um_to_m(self._gripper_um),)

    def fresh(self, now: float) -> bool:
        """Every joint feedback group (and the gripper's) arrived within feedback_timeout_s of `now`."""
        needed = (*codec.JOINT_FEEDBACK_IDS, codec.GRIPPER_FEEDBACK_ID)
        return all(i in self._seen and now - self._seen[i] <= self.config.feedback_timeout_s for i in needed)

    def joint_state(self, now: float) -> JointStateReading | None:
        """The measured joint state while feedback is fresh; None when stale or incomplete."""
        values = self.measured()
        if values is None or not self.fresh(now):
            return None
        return JointStateReading(self.names, values, max(self._seen.values()))

    # ------------------------------------------------------------------------------------ commands
    def command(self, arm_rad: Sequence[float], gripper_m: float | None, now: float) -> CommandResult:
        """Take the latest command (6 arm joints in rad, the gripper opening in m or None to leave it).
        Nothing is sent here: step() sends the accepted target at the driver's rate."""
        values = list(arm_rad) + ([] if gripper_m is None else [gripper_m])
        if len(arm_rad) != ARM_JOINTS:
            return self._reject(f"a command needs {ARM_JOINTS} arm joints, got {len(arm_rad)}")
        try:
            values = [float(v) for v in values]
        except (TypeError, ValueError):
            return self._reject(f"command values must be numbers: {values!r}")
        bad = [n for n, v in zip(self.names, values) if not math.isfinite(v)]
        if bad:
            return self._reject(f"non-finite command for {', '.join(bad)} refused; nothing sent")
        self._clear("command_rejected", "commands are valid again")
        clamped_names, target = [], []
        for name, v, (lo, hi) in zip(self.names, values, (*ARM_JOINT_LIMITS_RAD, GRIPPER_RANGE_M)):
            c = min(max(v, lo), hi)
            if c != v:
                clamped_names.append(name)
                if name not in self._clamping:
                    self._events.append(DriverEvent("clamped", "warn", f"{name} command {v:.4f} clamped to "
                                                    f"{c:.4f} (limits {lo}..{hi})"))
            target.append(c)
        self._clamping = set(clamped_names)
        self._arm_target = tuple(target[:ARM_JOINTS])
        if gripper_m is not None:
            self._gripper_target = target[ARM_JOINTS]
            if self._gripper_startup is None:
                self._gripper_startup = target[ARM_JOINTS]
        self._update_arming(now)
        return CommandResult(True, clamped=tuple(clamped_names))

    def refuse(self, error: str) -> CommandResult:
        """Refuse a command the caller could not even read (missing joints, malformed message)."""
        return self._reject(error)

    @property
    def arm_target(self) -> tuple[float, ...] | None:
        """The last accepted (clamped) arm command, rad; None before the first one."""
        return self._arm_target

    def _reject(self, error: str) -> CommandResult:
        self._raise("command_rejected", "warn", error)
        return CommandResult(False, error=error)

    def _update_arming(self, now: float) -> None:
        measured = self.measured()
        if not self.arm_armed and self._arm_target is not None and measured is not None and self.fresh(now):
            gap = max(abs(t - m) for t, m in zip(self._arm_target, measured[:ARM_JOINTS]))
            if gap <= self.config.hold_tolerance_rad:
                self.arm_armed = True
                was_holding = "holding" in self._active
                self._active.discard("holding")
                self._events.append(DriverEvent("tracking", "info", f"arm command matches the measured position "
                                                f"(within {gap:.4f} rad): following arm commands",
                                                resolved=was_holding))
            else:
                self._raise("holding", "info", f"holding position: the arm command is {gap:.3f} rad from the "
                                               f"measured position (tolerance {self.config.hold_tolerance_rad})")
        if (not self.gripper_armed and self._gripper_target is not None
                and abs(self._gripper_target - self._gripper_startup) > self.config.gripper_startup_eps_m):
            self.gripper_armed = True
            self._events.append(DriverEvent("tracking", "info", f"gripper command changed from its startup value "
                                            f"{self._gripper_startup:.4f} m: following gripper commands"))

    # ------------------------------------------------------------------------------------ the cycle
    def step(self, now: float) -> JointStateReading | None:
        """One cycle: read feedback, watch its age, keep the arm in CAN mode, send the motion frames.
        Returns the joint state to publish (None while feedback is stale or incomplete)."""
        if self._started_at is None:
            self.start(now)
        self.poll(now)
        fresh = self.fresh(now)
        if not fresh:
            since = max(self._seen.values(), default=self._started_at)
            if now - since > self.config.feedback_timeout_s:
                self._raise("feedback_timeout", "halt",
                            f"no complete Piper feedback for {now - since:.3f} s (timeout "
                            f"{self.config.feedback_timeout_s} s): dead bus or arm off; motion commands stopped")
            self._disarm()
        else:
            self._clear("feedback_timeout", "Piper feedback is back")
        if not self.in_can_mode:
            if now - self._last_mode_sent >= self.config.mode_retry_s:
                mode = "no status frame yet" if self.status is None else (
                    f"control mode 0x{self.status.ctrl_mode:02X}, move mode 0x{self.status.move_mode:02X}")
                self._raise("not_in_can_mode", "warn", f"arm not in CAN command mode / MOVE J ({mode}): "
                                                       f"re-sending enable and mode every {self.config.mode_retry_s} s")
                self._send_mode(now)
            self._disarm()   # e.g. teach mode: the arm may be moved by hand before CAN mode returns
            return self.joint_state(now)
        self._clear("not_in_can_mode", "arm in CAN command mode (MOVE J)")
        if not fresh:
            return None
        self._update_arming(now)
        if self.arm_armed:
            t = [codec.rad_to_mdeg(v) for v in self._arm_target]
            for first in (1, 3, 5):
                self._send(codec.encode_joint_ctrl(codec.JointPair(first, t[first - 1], t[first])))
        if self.gripper_armed:
            self._send(codec.encode_gripper_ctrl(codec.GripperCommand(
                codec.m_to_um(self._gripper_target), codec.nm_to_mnm(self.config.gripper_effort_nm),
                codec.GRIPPER_ENABLE)))
        return self.joint_state(now)

    def _disarm(self) -> None:
        """Whatever commands arrive next must match the arm again (the startup hold) before they move it."""
        if self.arm_armed or self.gripper_armed:
            self.arm_armed = False
            self.gripper_armed = False
            self._gripper_startup = self._gripper_target

    # ------------------------------------------------------------------------------------ events, sending
    def drain_events(self) -> list[DriverEvent]:
        events, self._events = self._events, []
        return events

    def _raise(self, key: str, severity: str, description: str) -> None:
        if key not in self._active:
            self._active.add(key)
            self._events.append(DriverEvent(key, severity, description))

    def _clear(self, key: str, description: str) -> None:
        if key in self._active:
            self._active.discard(key)
            self._events.append(DriverEvent(key, "info", description, resolved=True))

    def _send(self, msg: can.Message) -> None:
        try:
            self.bus.send(msg, timeout=0.01)
        except can.CanError as exc:
            self._raise("bus_error", "warn", f"sending frame 0x{msg.arbitration_id:03X} failed: {exc}")
            return
        self.frames_sent += 1
        self._clear("bus_error", "CAN bus writes work again")
