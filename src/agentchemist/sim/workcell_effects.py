"""What the robot's arm motions do to the bench of the weighing: carrying the beaker between stations,
grasping and tilting the solid bottle, pressing the stirrer's button.

The twin's arms are kinematic (no contact physics yet), so, as for the pipette draw (draw_trigger.py),
the effects are read off the measured joint positions and gripper openings against the taught poses
(config/poses.yaml):

- beaker: the beaker arm's gripper closing on the beaker (opening <= beaker_grasp_mm + grip margin)
  while the arm is at ``beaker_at_<X>`` picks the beaker up at station X; opening it again (past
  beaker_grasp_mm + release margin) at ``beaker_at_<Y>`` sets it down on Y. Closing anywhere else, or
  closing before arriving, grasps nothing (the jaws would have hit the beaker on the way).
- bottle: the bottle arm's gripper closing at ``solid_bottle`` grasps the bottle; while held, the tilt
  follows the wrist by the convention of policy/primitives.py (bottle_tilt_deg: joint6 past the pour
  pose's, only with joints 1..5 at ``pour_over_beaker``; upright anywhere else). Opening the gripper
  releases it only when it is upright: a tilted bottle is not let go (refused once per opening).
- buttons: the arm reaching ``<device>_button`` presses it (once per arrival).

``BenchEffects`` is pure logic over measured values (unit tests feed it directly); ``TwinBench`` feeds it
from a LabTwin every tick and applies its events to the twin (move_labware, grasp_bottle / release_bottle,
tilt_bottle, set_stirrer). The ROS twin node (lab_sim) calls ``TwinBench.tick`` after each step and logs
what it reports.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from agentchemist.workcell.stations import BUTTON_SUFFIX, STATION_PREFIX
from agentchemist.policy.primitives import BOTTLE_POSE, BOTTLE_SIDE, POUR_POSE, Poses, bottle_tilt_deg
from agentchemist.sim.lab import BOTTLE_UPRIGHT_DEG

__all__ = ["BenchEffects", "BenchEffectsConfig", "BenchEvent", "TwinBench", "UPRIGHT_DEG"]

#: Below this tilt (deg) the bottle counts as upright: it may be let go (the twin's own rule), and a
#: wrist settling onto the pour pose (hundredths of a degree off) does not tilt it.
UPRIGHT_DEG = BOTTLE_UPRIGHT_DEG


@dataclass(frozen=True)
class BenchEffectsConfig:
    poses: Poses
    beaker_side: str = "right"
    bottle_side: str = BOTTLE_SIDE
    #: closed on an object: the opening is at most its grasp opening plus this (the jaws stop on it)
    grip_margin_mm: float = 1.5
    #: released: the opening is at least the grasp opening plus this (hysteresis against jitter)
    release_margin_mm: float = 5.0

    def station_poses(self) -> dict[str, tuple[float, ...]]:
        arm = self.poses.arms.get(self.beaker_side, {})
        return {n[len(STATION_PREFIX):]: v for n, v in arm.items() if n.startswith(STATION_PREFIX)}

    def button_poses(self) -> dict[str, dict[str, tuple[float, ...]]]:
        """side -> device -> pose of every `<device>_button` pose."""
        return {side: {n[:-len(BUTTON_SUFFIX)]: v for n, v in arm.items() if n.endswith(BUTTON_SUFFIX)}
                for side, arm in self.poses.arms.items()}


@dataclass(frozen=True)
class BenchEvent:
    """kind: beaker_picked | beaker_placed | beaker_let_go | bottle_grasped | bottle_released |
    bottle_release_refused | pressed. ``where``: the station (beaker), the device (pressed)."""

    kind: str
    where: str = ""
    tilt_deg: float = 0.0
    side: str = ""


@dataclass
class BenchEffects:
    config: BenchEffectsConfig
    carrying_from: str | None = None        #: station the beaker was picked up at (None: not carried)
    bottle_held: bool = False
    _closed: dict[str, bool] = field(default_factory=dict)
    _at_button: dict[str, str] = field(default_factory=dict)
    _refused: bool = False
    _tilt: float = 0.0

    def __post_init__(self) -> None:
        if self.config.beaker_side == self.config.bottle_side:
            raise ValueError("the beaker and the bottle are carried by different arms")
        self._stations = self.config.station_poses()
        self._buttons = self.config.button_poses()
        self._tol = self.config.poses.tolerance_rad
        self._bottle_pose = self.config.poses.pose(self.config.bottle_side, BOTTLE_POSE)
        g = self.config.poses.gripper_mm
        self._grasp_mm = {self.config.beaker_side: g["beaker_grasp_mm"], self.config.bottle_side: g["bottle_grasp_mm"]}

    # ---------------------------------------------------------------- geometry
    def _at(self, arm: Sequence[float] | None, pose: Sequence[float]) -> bool:
        return arm is not None and len(arm) == len(pose) and max(abs(a - b) for a, b in zip(arm, pose)) <= self._tol

    def station_at(self, arm: Sequence[float] | None) -> str | None:
        """The station whose beaker pose the beaker arm is at, if any."""
        return next((s for s, pose in self._stations.items() if self._at(arm, pose)), None)

    def tilt_deg(self, bottle_arm: Sequence[float] | None) -> float:
        """The held bottle's tilt for the bottle arm's joints (0 when not held or not at the pour pose).

        Within UPRIGHT_DEG of upright it is upright: the arm settles onto a pose exponentially, so a
        wrist "at" the pour pose is hundredths of a degree off for a while (no powder moves there, and
        the bottle should then count as upright everywhere, e.g. for the camera and for letting go)."""
        if not self.bottle_held:
            return 0.0
        tilt = bottle_tilt_deg(self.config.poses, bottle_arm)
        return 0.0 if tilt is None or tilt < UPRIGHT_DEG else tilt

    # ---------------------------------------------------------------- update
    def update(self, arms: Mapping[str, Sequence[float]], openings_mm: Mapping[str, float],
               bottle_tilt_now_deg: float | None = None) -> list[BenchEvent]:
        """Feed one tick of measured joints (side -> 6 angles, rad) and gripper openings (side -> mm).

        ``bottle_tilt_now_deg``: the twin's present bottle tilt (it follows the wrist with a rate limit),
        used to decide whether the bottle may be released; default: the wrist's tilt.
        Returns the events of this tick, in order."""
        events: list[BenchEvent] = []
        events += self._beaker(arms.get(self.config.beaker_side), openings_mm.get(self.config.beaker_side))
        events += self._bottle(arms.get(self.config.bottle_side), openings_mm.get(self.config.bottle_side),
                               bottle_tilt_now_deg)
        events += self._press(arms)
        return events

    def _gripper_state(self, side: str, opening_mm: float | None) -> tuple[bool, bool]:
        """(closing now: open -> closed this tick, opening now: closed -> open this tick)."""
        if opening_mm is None:
            return False, False
        c = self.config
        was = self._closed.get(side, False)
        grasp = self._grasp_mm[side]
        if opening_mm <= grasp + c.grip_margin_mm:
            now = True
        elif opening_mm >= grasp + c.release_margin_mm:
            now = False
        else:
            now = was  # between the two thresholds: unchanged
        self._closed[side] = now
        return now and not was, was and not now

    def _beaker(self, arm: Sequence[float] | None, opening_mm: float | None) -> list[BenchEvent]:
        side = self.config.beaker_side
        closing, opening = self._gripper_state(side, opening_mm)
        station = self.station_at(arm)
        if closing and self.carrying_from is None and station is not None:
            self.carrying_from = station
            return [BenchEvent("beaker_picked", station, side=side)]
        if opening and self.carrying_from is not None:
            self.carrying_from = None
            if station is None:
                return [BenchEvent("beaker_let_go", "", side=side)]
            return [BenchEvent("beaker_placed", station, side=side)]
        return []

    def _bottle(self, arm: Sequence[float] | None, opening_mm: float | None,
                tilt_now: float | None) -> list[BenchEvent]:
        side = self.config.bottle_side
        closing, _ = self._gripper_state(side, opening_mm)
        if closing and not self.bottle_held and self._at(arm, self._bottle_pose):
            self.bottle_held = True
            self._refused = False
            return [BenchEvent("bottle_grasped", BOTTLE_POSE, side=side)]
        if self.bottle_held and not self._closed.get(side, False):
            tilt = self.tilt_deg(arm) if tilt_now is None else tilt_now
            if tilt <= UPRIGHT_DEG:
                self.bottle_held = False
                self._refused = False
                return [BenchEvent("bottle_released", "", tilt, side)]
            if not self._refused:  # once per opening: the gripper stays on a tilted bottle
                self._refused = True
                return [BenchEvent("bottle_release_refused", "", tilt, side)]
        elif self._closed.get(side, False):
            self._refused = False
        return []

    def _press(self, arms: Mapping[str, Sequence[float]]) -> list[BenchEvent]:
        events = []
        for side, buttons in self._buttons.items():
            arm = arms.get(side)
            device = next((d for d, pose in buttons.items() if self._at(arm, pose)), "")
            if device and self._at_button.get(side) != device:
                events.append(BenchEvent("pressed", device, side=side))
            self._at_button[side] = device
        return events


class TwinBench:
    """Applies the bench effects to a LabTwin: call ``tick(now)`` after every ``twin.step(now)``.

    Returns what happened as (level, message) pairs ("info" | "warn") for the caller's log. The
    beaker's stations and the pressed devices are layout items named by kind (``beaker_at_balance``
    -> the item of kind balance); the beaker picked up is the one standing on that item."""

    def __init__(self, twin, poses: Poses) -> None:
        self.twin = twin
        w = twin.scenario.weighing
        self.config = BenchEffectsConfig(poses, bottle_side=w.held_by if w is not None else BOTTLE_SIDE)
        self.reset()

    def reset(self) -> None:
        """Nothing carried or held (a fresh bench: LabTwin.new_sample)."""
        self.effects = BenchEffects(self.config)
        self.carried: str | None = None   #: id of the beaker in the gripper
        self.tilt_sent = 0.0              #: the bottle tilt last given to the twin

    def tick(self, now: float) -> list[tuple[str, str]]:
        twin = self.twin
        names, positions = twin.joint_states()
        joints = dict(zip(names, positions))
        sides = (self.config.beaker_side, self.config.bottle_side)
        arms = {s: [joints[f"{s}_joint{i}"] for i in range(1, 7)] for s in sides}
        openings = {s: joints[f"{s}_gripper"] * 1000.0 for s in sides}
        bottle = twin.bottle
        log: list[tuple[str, str]] = []
        for event in self.effects.update(arms, openings, bottle.tilt_deg if bottle is not None else None):
            log += self._apply(event, now)
        side = self.config.bottle_side
        if twin.bottle_held:
            tilt = self.effects.tilt_deg(arms[side])
            if tilt != self.tilt_sent:
                result = twin.tilt_bottle(side, tilt, now)
                self.tilt_sent = tilt
                if not result.accepted:
                    log.append(("warn", f"bottle tilt refused: {result.reason}"))
        return log

    def _item(self, kind: str):
        """The present layout item of kind ``kind``."""
        return next((i for i in self.twin.layout if i.kind == kind and i.present), None)

    def _apply(self, event: BenchEvent, now: float) -> list[tuple[str, str]]:
        twin = self.twin
        if event.kind == "beaker_picked":
            base = self._item(event.where)
            beakers = [i for i in twin.layout
                       if base is not None and i.kind == "beaker" and i.present and i.on == base.id]
            if not beakers:
                self.effects.carrying_from = None  # the jaws closed on nothing
                return [("warn", f"{event.side} gripper closed at {STATION_PREFIX}{event.where}, but no beaker "
                                 f"stands on the {event.where}")]
            beaker = min(beakers, key=lambda i: abs(i.position[0] - base.position[0]))
            self.carried = beaker.id
            return [("info", f"{beaker.id} picked up from the {base.id}")]
        if event.kind == "beaker_placed":
            carried, self.carried = self.carried, None
            target = self._item(event.where)
            if carried is None:
                return []
            if target is None:
                return [("warn", f"{carried} set down where the {event.where} should be, but there is none: "
                                 "the twin leaves it where it was")]
            current = next(i for i in twin.layout if i.id == carried)
            if current.on != target.id:
                result = twin.move_labware(carried, now, on=target.id)
                if not result.accepted:
                    return [("warn", f"{carried} not moved: {result.reason}")]
            return [("info", f"{carried} placed on the {target.id}")]
        if event.kind == "beaker_let_go":
            carried, self.carried = self.carried, None
            return [("warn", f"{carried} let go away from every station: the twin leaves it where it was")]
        if event.kind == "bottle_grasped":
            result = twin.grasp_bottle(event.side, now)
            if not result.accepted:
                self.effects.bottle_held = False
                return [("warn", f"{event.side} gripper closed at the bottle's pose: {result.reason}")]
            return [("info", f"solid bottle grasped by the {event.side} gripper")]
        if event.kind == "bottle_released":
            result = twin.release_bottle(event.side, now)
            if result.accepted:
                self.tilt_sent = 0.0
                return [("info", f"solid bottle released by the {event.side} gripper")]
            if twin.bottle_held:
                self.effects.bottle_held = True
                return [("warn", f"bottle release refused: {result.reason}")]
            return []
        if event.kind == "bottle_release_refused":
            return [("warn", f"the {event.side} gripper opened on the bottle tilted by {event.tilt_deg:.1f} deg: "
                             "release refused, the twin keeps it in hand until it is upright")]
        if event.kind == "pressed":
            device = self._item(event.where)
            if event.where != "stirrer":
                return [("warn", f"{event.side} arm pressed the {event.where}'s button: no model of that device")]
            if device is None:
                return [("warn", "the stirrer's button was pressed, but there is no stirrer on the bench")]
            if not twin.stirrer_on:
                twin.set_stirrer(True, now)
                return [("info", f"stirrer switched on at {now:.2f} s")]
        return []
