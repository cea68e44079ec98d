"""Driver logic of one Piper arm over any python-can bus: CAN feedback -> joint state, commands -> frames.

It follows the piper_driver contract of docs/robot.md:

- the joint state has every joint: ``<side>_joint1..6`` in rad and ``<side>_gripper`` (the opening, m);
- commands are clamped to the Piper SDK's software limits (the bench description's,
  ``agentchemist.workcell.robot``; the twin clamps to the same) and each joint that starts being clamped
  is reported;
- commands are not acted on until trustworthy: the arm stays still (no joint frames at all) until a
  commanded arm position is within ``hold_tolerance_rad`` of the measured one, and the gripper stays
  still until a gripper command differs from the first one seen (ros2_control's startup value). Losing
  feedback re-arms this hold, since the commands may then no longer match where the arm is;
- start-up: enable the motors and enter CAN command mode (MOVE J), repeated until the arm's status frame
  confirms it; nothing that moves the arm is sent before that;
- a command with a non-finite value is refused whole (nothing sent), with an error, except a NaN gripper
  beside valid arm joints: ros2_control's value for a gripper never commanded (the arm follows, the
  gripper holds; said once);
- feedback older than ``feedback_timeout_s`` (a dead bus, an unpowered arm) is reported and motion
  frames stop until fresh feedback returns (the arm's controller holds its last target meanwhile);
- faults (health.py: error bits, joint limit, joint communication, over-temperature, driver faults, the
  gripper's error bit, a stuck gripper) put the arm in its safe state: it *holds* the position measured
  when the fault began (joint frames with that position, motors left enabled: disabling a loaded arm in
  the air would drop it), commands are taken but not followed. When every fault has cleared the startup
  hold applies again, so the arm moves only once the commands match where it is: recovery without a
  restart. A gripper fault holds only the gripper. Nothing here sends the quick e-stop by itself (the
  Piper's e-stop lets the joints sag under damping); ``emergency_stop`` / ``resume`` are the operator's;
- the joint state carries velocity and effort from the drivers' high-speed feedback (motor speed and
  current x the SDK's torque coefficient) and the gripper's opening rate and effort.

Time is the caller's ``now`` (seconds, any monotonic clock); nothing here reads a clock or sleeps.
Problems and state changes come out as :class:`DriverEvent` (``drain_events``), once when a condition
starts and once when it clears, so a 200 Hz stream of the same bad command does not flood the anomaly topic.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import can

from agentchemist.workcell.robot import ARM_JOINT_LIMITS_RAD, ARM_JOINTS, GRIPPER_RANGE_M, check_side
from agentchemist.hardware.piper import codec
from agentchemist.hardware.piper.health import ArmHealth, Fault
from agentchemist.params import param

GRIPPER_FAULTS = ("gripper_error", "gripper_stuck")


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
    motor_temp_limit_c: float = param(70.0, unit="C", low=20.0, high=120.0,
                                      description="A motor at or above this temperature is over temperature: hold")
    driver_temp_limit_c: float = param(75.0, unit="C", low=20.0, high=120.0,
                                       description="A joint driver at or above this temperature is over "
                                                   "temperature: hold")
    gripper_stuck_s: float = param(0.5, unit="s", low=0.05, high=10.0,
                                   description="A gripper driven towards a target that has not moved "
                                               "gripper_move_eps_m in this long, with less than "
                                               "gripper_contact_effort_nm of effort (not a grasp), is stuck")
    gripper_move_eps_m: float = param(2e-4, unit="m", low=1e-6, high=0.01,
                                      description="Opening change that counts as gripper motion")
    gripper_contact_effort_nm: float = param(0.3, unit="N m", low=0.0, high=5.0,
                                             description="Gripper effort above which a stalled gripper is "
                                                         "holding an object, not stuck")
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
    velocities: tuple[float, ...] = ()   # rad/s and m/s; empty until every driver's speed is heard
    efforts: tuple[float, ...] = ()      # N m (the gripper's too); empty until every driver's current is heard


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
        c = self.config
        self.health = ArmHealth(c.motor_temp_limit_c, c.driver_temp_limit_c)
        self.faults: dict[str, Fault] = {}
        self._hold: tuple[float, ...] | None = None  # arm position held while an arm fault lasts
        self._gripper_hold: float | None = None
        self._gripper_rate = 0.0                     # m/s, from consecutive gripper frames
        self._gripper_progress: tuple[int, float] | None = None   # (opening um, now) of the last motion
        self._estopped = False
        self._stuck_target: float | None = None

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

    def emergency_stop(self, now: float) -> None:
        """The operator's quick e-stop (0x150, 0x01). The arm's controller stops the joints; nothing moves
        until ``resume``."""
        self._estopped = True
        self._disarm()
        self._send(codec.encode_motion_ctrl_1(codec.MotionCtrl1(codec.ESTOP_STOP)))
        self._raise("emergency_stop", "halt", "emergency stop requested: quick stop sent (0x150 0x01)")

    def resume(self, now: float) -> None:
        """Leave the e-stop (0x150, 0x02), then enable and CAN mode again; the startup hold applies."""
        self._estopped = False
        self._send(codec.encode_motion_ctrl_1(codec.MotionCtrl1(codec.ESTOP_RESUME)))
        self._send_mode(now)
        self._clear("emergency_stop", "resumed from the emergency stop (0x150 0x02); holding until commands "
                                      "match the arm")

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
        i = msg.arbitration_id
        if i in codec.JOINT_FEEDBACK_IDS:
            k = record.first - 1
            self._arm_mdeg[k], self._arm_mdeg[k + 1] = record.a_mdeg, record.b_mdeg
        elif i == codec.GRIPPER_FEEDBACK_ID:
            last = self._seen.get(i)
            if last is not None and self._gripper_um is not None and now > last:
                self._gripper_rate = codec.um_to_m(record.opening_um - self._gripper_um) / (now - last)
            self.gripper_feedback = record
            self._gripper_um = record.opening_um
        elif i in codec.HIGH_SPEED_IDS:
            self.health.on_high(record, now)
        elif i in codec.LOW_SPEED_IDS:
            self.health.on_low(record, now)
        else:
            self.status = record
        self._seen[i] = now
        return True

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
        timeout = self.config.feedback_timeout_s
        vel, eff = self.health.velocities(now, timeout), self.health.efforts(now, timeout)
        gripper_effort = self.gripper_feedback.effort_mnm / 1000.0
        newest = max(self._seen[i] for i in (*codec.JOINT_FEEDBACK_IDS, codec.GRIPPER_FEEDBACK_ID))
        return JointStateReading(self.names, values, newest,
                                 () if vel is None else (*vel, self._gripper_rate),
                                 () if eff is None else (*eff, gripper_effort))

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
        if gripper_m is not None and math.isnan(values[ARM_JOINTS]):
            # NaN is ros2_control's "never written": a command interface without an initial_value starts as
            # NaN and the gripper's forward command controller writes nothing before its first message, so
            # the topic-based system sends NaN for the gripper beside valid arm commands. The arm follows;
            # the gripper stays where it is (no gripper frame) until a number comes.
            values, gripper_m = values[:ARM_JOINTS], None
            self._raise("gripper_uncommanded", "info", "gripper command is NaN (not commanded yet): the gripper "
                                                       "holds its opening, the arm commands are followed")
        elif gripper_m is not None:
            self._clear("gripper_uncommanded", "gripper commanded: following gripper commands")
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
        if self._hold is not None or self._estopped:
            return              # the safe state: only the fault's clearing (or resume) lets commands in
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
        if (not self.gripper_armed and self._gripper_hold is None and self._gripper_target is not None
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
        if fresh:
            self._update_faults(now)
        if self._estopped:      # the operator's stop: nothing is sent until resume()
            self._disarm()
            return self.joint_state(now) if fresh else None
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
        arm = self._hold if self._hold is not None else (self._arm_target if self.arm_armed else None)
        if arm is not None:
            t = [codec.rad_to_mdeg(v) for v in arm]
            for first in (1, 3, 5):
                self._send(codec.encode_joint_ctrl(codec.JointPair(first, t[first - 1], t[first])))
        # a held gripper is commanded to where it is only if it was enabled (a hold never enables it)
        held = self._gripper_hold if self.gripper_feedback.enabled else None
        gripper = held if self._gripper_hold is not None else (self._gripper_target if self.gripper_armed else None)
        if gripper is not None:
            self._send(codec.encode_gripper_ctrl(codec.GripperCommand(
                codec.m_to_um(gripper), codec.nm_to_mnm(self.config.gripper_effort_nm), codec.GRIPPER_ENABLE)))
        return self.joint_state(now)

    # ------------------------------------------------------------------------------------ faults
    def _update_faults(self, now: float) -> None:
        """Raise and clear each fault once; enter and leave the safe state (hold where the arm is)."""
        faults = self.health.faults(self.status, self.gripper_feedback)
        stuck = self._gripper_stuck(now)
        if stuck is not None:
            faults["gripper_stuck"] = stuck
        for kind, fault in faults.items():
            self._raise(kind, fault.severity, fault.description)
        for kind in set(self.faults) - set(faults):
            self._clear(kind, f"{kind.replace('_', ' ')} cleared" + (
                "" if kind in GRIPPER_FAULTS else ": holding until commands match the arm"))
        self.faults = faults
        measured = self.measured()
        arm_fault = any(k not in GRIPPER_FAULTS for k in faults)
        if arm_fault and self._hold is None:
            self._hold = measured[:ARM_JOINTS]
            self.arm_armed = False
        elif not arm_fault:
            self._hold = None
        gripper_fault = bool(faults)      # an arm fault holds the gripper too: never let go mid-fault
        if gripper_fault and self._gripper_hold is None:
            self._gripper_hold = measured[ARM_JOINTS]
            self.gripper_armed = False
            self._gripper_startup = self._gripper_target
        elif not gripper_fault:
            self._gripper_hold = None

    def _gripper_stuck(self, now: float) -> Fault | None:
        """Driven towards a target, not moving, and without the effort of a grasp: stuck. It stays stuck
        until the gripper is commanded somewhere else."""
        c = self.config
        if self._stuck_target is not None:
            if (self._gripper_target is not None
                    and abs(self._gripper_target - self._stuck_target) <= c.gripper_startup_eps_m):
                return self.faults.get("gripper_stuck")
            self._stuck_target = None
        if not self.gripper_armed:
            self._gripper_progress = None
            return None
        um = self._gripper_um
        if (self._gripper_progress is None
                or abs(um - self._gripper_progress[0]) >= codec.m_to_um(c.gripper_move_eps_m)):
            self._gripper_progress = (um, now)
            return None
        gap = abs(self._gripper_target - codec.um_to_m(um))
        effort = abs(self.gripper_feedback.effort_mnm) / 1000.0
        if (gap > c.gripper_move_eps_m and effort < c.gripper_contact_effort_nm
                and now - self._gripper_progress[1] >= c.gripper_stuck_s):
            self._stuck_target = self._gripper_target
            self._gripper_progress = None
            return Fault("gripper_stuck", "warn", f"gripper stuck at {codec.um_to_m(um) * 1000:.2f} mm: no motion "
                         f"towards {self._gripper_target * 1000:.2f} mm for {c.gripper_stuck_s} s with "
                         f"{effort:.2f} N m (no grasp): gripper held where it is until commanded elsewhere")
        return None

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
