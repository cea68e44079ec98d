"""The drops controller's fault checks: what ends a squeeze in a RESET (a timeout, a silent or frozen pH
meter, an empty pipette, no drop for too much squeeze, a stalled gripper) and the drops that fell unbidden
(reported, nothing to undo). See agentchemist.control.dispenser's module docstring for the reasons.
"""
from __future__ import annotations

import math
from collections import deque

from agentchemist.control.dispenser_types import ControllerAnomaly, DispenserConfig, State


class FaultChecks:
    """The checks one control update runs before the machine decides (`detect`)."""

    def __init__(self, config: DispenserConfig):
        self.config = config
        self.stall_since: float | None = None     #: when the gripper fell behind its command
        self._follow: deque[tuple[float, float, float]] = deque()  #: (t, command, measured) in this MOTION

    def new_state(self) -> None:
        """The follow check looks at one MOTION at a time."""
        self._follow.clear()

    def detect(self, ctl, now: float, measured: float) -> ControllerAnomaly | None:
        """The anomaly the controller `ctl` (read only) is in at `now`, if any."""
        c = self.config
        if now - ctl.started > ctl.timeout:
            return ControllerAnomaly(now, "operation_timeout",
                                     f"dispensing ran longer than {ctl.timeout:.0f} s", "halt")
        if ctl.state == State.RESET:
            return None
        ph_stamp = ctl.pacing.last_ph_stamp
        if ctl.goal.target_ph is not None and not ctl.holds:
            last = max(ph_stamp if ph_stamp is not None else ctl.started, ctl.released_at)
            if now - last > c.sensor_timeout_s:
                return ControllerAnomaly(now, "sensor_timeout",
                                         f"no pH reading for {now - last:.1f} s", "warn")
        if (ctl.goal.target_ph is not None or ctl.goal.settle_each_drop) and not ctl.holds and ctl.frozen.frozen:
            # Dispensing on a frozen reading would titrate blind (and call every drop settled).
            return ControllerAnomaly(now, "ph_stuck", ctl.frozen.describe(), "warn")
        if ctl.state == State.MOTION:
            if (ctl.command <= c.min_opening_mm + c.resolution_mm
                    and measured <= c.min_opening_mm + c.stall_tolerance_mm):
                return ControllerAnomaly(now, "pipette_empty",
                                         "the bulb is fully squeezed: the pipette is empty", "warn")
            ledger = ctl.ledger
            allowed = c.no_drop_factor * c.drop_displacement_mm + (0.0 if ledger.primed else c.priming_allowance_mm)
            if ledger.since_drop_mm > allowed:
                return ControllerAnomaly(
                    now, "no_drop",
                    f"no drop after {ledger.since_drop_mm:.3f} mm of squeeze "
                    f"(expected one every {c.drop_displacement_mm:.3f} mm)", "warn")
        if abs(ctl.command - measured) > c.stall_tolerance_mm:
            if self.stall_since is None:
                self.stall_since = now
            elif now - self.stall_since > c.stall_time_s:
                return ControllerAnomaly(
                    now, "gripper_stall",
                    f"gripper at {measured:.3f} mm, commanded {ctl.command:.3f} mm for "
                    f"{now - self.stall_since:.1f} s", "warn")
        else:
            self.stall_since = None
        return self._not_following(now, measured, ctl.command) if ctl.state == State.MOTION else None

    def _not_following(self, now: float, measured: float, command: float) -> ControllerAnomaly | None:
        """A gripper that does not follow a slow squeeze at all: over stall_time_s of MOTION the command
        moved by stall_min_move_mm or more and the gripper by less than stall_follow_fraction of it."""
        c = self.config
        if not math.isfinite(measured):
            return None
        follow = self._follow
        follow.append((now, command, measured))
        while len(follow) > 1 and follow[1][0] <= now - c.stall_time_s:
            follow.popleft()
        t0, command0, measured0 = follow[0]
        if now - t0 < c.stall_time_s:
            return None
        commanded, moved = abs(command0 - command), abs(measured0 - measured)
        if commanded >= c.stall_min_move_mm and moved < c.stall_follow_fraction * commanded:
            return ControllerAnomaly(
                now, "gripper_stall",
                f"gripper at {measured:.3f} mm does not follow: commanded {commanded:.3f} mm in "
                f"{now - t0:.1f} s, moved {moved:.3f} mm", "warn")
        return None


class UnbiddenDrops:
    """Drops that were not squeezed out: judged from the command history between the moments two drops left
    the tip (their heard onsets less the fall time, the jaws' lag added)."""

    def __init__(self, config: DispenserConfig, start_opening_mm: float, now: float):
        self.config = config
        self.started = now
        self.notes: list[ControllerAnomaly] = []  #: anomalies to report that need no RESET
        self._early_check = False        #: the next drop's squeeze can be judged (see on_drop)
        self._commands: deque[tuple[float, float]] = deque([(now, start_opening_mm)])  #: (t, command) history
        self._last_drop_stamp: float | None = None
        self._to_judge: list[tuple[float, float]] = []  #: (previous drop, drop) onsets not yet judged

    def on_drop(self, stamp: float, primed: bool) -> None:
        """A drop heard (`primed`: the goal had heard one before)."""
        back = self.config.drop_fall_s + self.config.gripper_lag_s
        if (self._early_check and self._last_drop_stamp is not None and stamp >= self._last_drop_stamp
                and self._last_drop_stamp - back >= self.started):
            # judged once the command history covers the moment it left the tip (see _judge)
            self._to_judge.append((self._last_drop_stamp, stamp))
        # The first drop of a goal or after a RESET comes from a pendant formed before: not judged.
        self._early_check = primed
        # keep the history the judgements still need: from the earliest onset a pending one looks at
        keep_from = min([b for b, _ in self._to_judge] + [stamp]) - back - 0.5
        self._last_drop_stamp = stamp
        while len(self._commands) > 2 and self._commands[1][0] <= keep_from:
            self._commands.popleft()

    def reset(self, *, pending: bool) -> None:
        """The pendant formed before a RESET may fall early: the next drop is not judged (`pending`: nor are
        those waiting for their judgement, shaken off while the jaws open)."""
        self._early_check = False
        if pending:
            self._to_judge.clear()

    def take_notes(self) -> list[ControllerAnomaly]:
        notes, self.notes = self.notes, []
        return notes

    def record_command(self, now: float, command: float) -> None:
        if now > self._commands[-1][0]:
            self._commands.append((now, command))
            if len(self._commands) > 20000:  # no drop for a long time: nothing to judge that far back
                self._commands.popleft()
        if self._to_judge:
            self._judge()

    def _judge(self) -> None:
        """Was each pending drop squeezed out (see the module docstring, unbidden drops)?"""
        c = self.config
        back = c.drop_fall_s + c.gripper_lag_s
        known = self._commands[-1][0]
        while self._to_judge and self._to_judge[0][1] - back <= known:
            before, stamp = self._to_judge.pop(0)
            share = (self._command_at(before - back) - self._command_at(stamp - back)) / c.drop_displacement_mm
            still = stamp - c.drop_fall_s - self._last_move_before(stamp - c.drop_fall_s)
            why = ""
            if share < c.early_drop_fraction:
                why = f"after only {share:.2f} of a drop's squeeze since the previous one"
            elif still >= c.still_drop_s:
                why = f"{still:.2f} s after the gripper stopped squeezing"
            if why:
                self.notes.append(ControllerAnomaly(
                    stamp, "unexpected_drop", f"a drop fell {why}: it was not squeezed out (a drop leaking "
                    f"from the tip); counted in the volume", "warn", "adjustment"))

    def _command_at(self, t: float) -> float:
        """The commanded opening at time t (mm), linear between control updates."""
        hist = self._commands
        if t <= hist[0][0]:
            return hist[0][1]
        for (t0, c0), (t1, c1) in zip(hist, list(hist)[1:]):
            if t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
        return hist[-1][1]

    def _last_move_before(self, t: float) -> float:
        """When the command last changed at or before t (the goal's start if it never did)."""
        last = self.started
        hist = self._commands
        for (t0, c0), (t1, c1) in zip(hist, list(hist)[1:]):
            if t1 > t:
                break
            if c1 != c0:
                last = t1
        return last
