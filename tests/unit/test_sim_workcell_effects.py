"""Bench effects of the arms in the twin: carrying the beaker between stations, grasping, tilting and
releasing the solid bottle, pressing the stirrer's button (sim/workcell_effects.py), and the twin's bottle
grasp and tilt target (LabTwin.grasp_bottle / release_bottle / tilt_bottle)."""
import pytest

from agentchemist.policy.primitives import bottle_tilt_joints, load_poses, plan_primitive, step_reached
from agentchemist.sim.workcell_effects import BenchEffects, BenchEffectsConfig, TwinBench
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

NACL = REPO / "config" / "scenarios" / "nacl_weighing.yaml"
POSES = load_poses()
OPEN = POSES.gripper_mm["open_mm"]
BEAKER = POSES.gripper_mm["beaker_grasp_mm"]
BOTTLE = POSES.gripper_mm["bottle_grasp_mm"]
HOME = POSES.pose("right", "home")


def pose(side, name):
    return list(POSES.pose(side, name))


def feed(fx, right=HOME, right_mm=OPEN, left=HOME, left_mm=OPEN, tilt_now=None):
    return fx.update({"right": right, "left": left}, {"right": right_mm, "left": left_mm}, tilt_now)


def kinds(events):
    return [(e.kind, e.where) for e in events]


# ------------------------------------------------------------------ pure logic
def test_closing_at_one_station_and_opening_at_another_carries_the_beaker():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    bal, stir = pose("right", "beaker_at_balance"), pose("right", "beaker_at_stirrer")
    assert feed(fx, right=bal) == []
    assert kinds(feed(fx, right=bal, right_mm=BEAKER + 0.4)) == [("beaker_picked", "balance")]
    assert feed(fx, right=bal, right_mm=BEAKER) == []          # still closed: one event
    assert feed(fx, right=HOME, right_mm=BEAKER) == []         # carried through the air
    assert kinds(feed(fx, right=stir, right_mm=OPEN)) == [("beaker_placed", "stirrer")]
    assert fx.carrying_from is None


def test_a_gripper_that_does_not_close_on_the_beaker_carries_nothing():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    bal, stir = pose("right", "beaker_at_balance"), pose("right", "beaker_at_stirrer")
    feed(fx, right=bal)
    assert feed(fx, right=bal, right_mm=BEAKER + 3.0) == []    # short of the beaker (grasp + 1.5 mm margin)
    assert feed(fx, right=stir, right_mm=OPEN) == []
    assert fx.carrying_from is None


def test_closing_before_arriving_or_away_from_a_station_grasps_nothing():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    bal = pose("right", "beaker_at_balance")
    near = [bal[0] + 0.1, *bal[1:]]                             # beyond tolerance_rad of the pose
    assert feed(fx, right=near, right_mm=BEAKER) == []
    assert feed(fx, right=bal, right_mm=BEAKER) == []          # arrived already closed: the jaws hit the glass
    assert fx.carrying_from is None


def test_opening_away_from_every_station_lets_the_beaker_go():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    bal = pose("right", "beaker_at_balance")
    feed(fx, right=bal)
    feed(fx, right=bal, right_mm=BEAKER)
    assert kinds(feed(fx, right=HOME, right_mm=OPEN)) == [("beaker_let_go", "")]


def test_the_bottle_is_grasped_at_its_pose_and_tilts_only_at_the_pour_pose():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    at_bottle, pour = pose("left", "solid_bottle"), pose("left", "pour_over_beaker")
    assert fx.tilt_deg(bottle_tilt_joints(POSES, 40.0)) == 0.0  # not held: no tilt
    feed(fx, left=at_bottle)
    assert kinds(feed(fx, left=at_bottle, left_mm=BOTTLE)) == [("bottle_grasped", "solid_bottle")]
    assert fx.bottle_held
    assert fx.tilt_deg(pour) == 0.0
    assert fx.tilt_deg(bottle_tilt_joints(POSES, 40.0)) == pytest.approx(40.0)
    assert fx.tilt_deg(bottle_tilt_joints(POSES, 0.3)) == 0.0   # a settling wrist: upright
    elsewhere = [*pose("left", "solid_bottle")[:5], pour[5] + 1.0]  # wrist turned, arm not at the pour pose
    assert fx.tilt_deg(elsewhere) == 0.0


def test_closing_the_left_gripper_away_from_the_bottle_grasps_nothing():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    feed(fx, left=HOME)
    assert feed(fx, left=HOME, left_mm=BOTTLE) == []
    assert not fx.bottle_held


def test_a_tilted_bottle_is_not_released_until_it_is_upright():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    at_bottle, tilted = pose("left", "solid_bottle"), list(bottle_tilt_joints(POSES, 50.0))
    feed(fx, left=at_bottle)
    feed(fx, left=at_bottle, left_mm=BOTTLE)
    assert kinds(feed(fx, left=tilted, left_mm=OPEN, tilt_now=50.0)) == [("bottle_release_refused", "")]
    assert feed(fx, left=tilted, left_mm=OPEN, tilt_now=49.0) == []   # refused once per opening
    assert fx.bottle_held
    upright = pose("left", "pour_over_beaker")
    assert kinds(feed(fx, left=upright, left_mm=OPEN, tilt_now=0.0)) == [("bottle_released", "")]
    assert not fx.bottle_held


def test_reaching_the_stirrer_button_presses_it_once_per_arrival():
    fx = BenchEffects(BenchEffectsConfig(POSES))
    button = pose("right", "stirrer_button")
    assert kinds(feed(fx, right=button)) == [("pressed", "stirrer")]
    assert feed(fx, right=button) == []
    assert feed(fx, right=HOME) == []
    assert kinds(feed(fx, right=button)) == [("pressed", "stirrer")]


def test_one_arm_cannot_carry_both():
    with pytest.raises(ValueError):
        BenchEffects(BenchEffectsConfig(POSES, beaker_side="left", bottle_side="left"))


# ------------------------------------------------------------------ the twin
def test_the_twins_bottle_pours_only_while_held_and_stops_at_the_wrists_tilt():
    tw = LabTwin(load_scenario(NACL))
    refused = tw.tilt_bottle("left", 60.0, 1.0)
    assert not refused.accepted and "not held" in refused.reason and tw.bottle.tilt_deg == 0.0
    assert not tw.grasp_bottle("right", 1.0).accepted          # the scenario's bottle hand is the left
    assert tw.grasp_bottle("left", 1.0).accepted and tw.bottle_held
    assert tw.tilt_bottle("left", 60.0, 1.0).accepted
    tw.step(1.3)                                              # 90 deg/s: 27 deg after 0.3 s
    assert tw.bottle.tilt_deg == pytest.approx(27.0, abs=1e-6)
    tw.step(3.0)
    assert tw.bottle.tilt_deg == 60.0 and tw.bottle.tilt_rate_deg_s == 0.0   # stopped exactly there
    tw.step(6.0)
    poured = tw.bottle.poured_g
    assert poured > 0.5                                        # 25 deg past the 35 deg threshold
    release = tw.release_bottle("left", 6.0)
    assert not release.accepted and "tilted" in release.reason and tw.bottle_held
    tw.tilt_bottle("left", 0.0, 6.0)
    tw.step(7.0)
    assert tw.bottle.tilt_deg == 0.0
    after = tw.bottle.poured_g
    tw.step(9.0)
    assert tw.bottle.poured_g == after                         # upright: nothing flows
    assert tw.release_bottle("left", 9.0).accepted and not tw.bottle_held
    assert tw.truth_summary()["bottle_held"] is False
    kinds_ = [e["kind"] for e in tw.truth()["events"]]
    assert "bottle_grasped" in kinds_ and "bottle_released" in kinds_


def test_tare_needs_the_balance_on_the_bench():
    tw = LabTwin(load_scenario(NACL))
    assert tw.tare_balance(1.0).accepted
    tw.inject_fault("labware_missing", 1.5, 10.0, id="balance")
    assert not tw.tare_balance(2.0).accepted


class Executor:
    """A stand-in for the action policy: command each step, advance the twin in 50 ms ticks (as lab_sim
    does), apply the bench effects, move on when the measured state reaches the step."""

    def __init__(self, twin):
        self.twin, self.bench, self.t, self.log = twin, TwinBench(twin, POSES), 1.0, []

    def tick(self):
        self.t = round(self.t + 0.05, 9)
        self.twin.step(self.t)
        self.log += self.bench.tick(self.t)

    def run(self, steps):
        for st in steps:
            if st.kind == "arm":
                self.twin.command_arm(st.side, st.target, self.t)
            elif st.kind == "gripper":
                self.twin.command_gripper(st.side, st.target[0], self.t)
            start = self.t
            while True:
                self.tick()
                names, values = self.twin.joint_states()
                j = dict(zip(names, values))
                arm = tuple(j[f"{st.side}_joint{i}"] for i in range(1, 7))
                if self.t - start >= 0.2 and step_reached(st, arm, j[f"{st.side}_gripper"], POSES.tolerance_rad):
                    break
                assert self.t - start < st.timeout_s, f"step {st.label} not reached"


def test_the_weighing_primitives_move_the_twins_bench():
    tw = LabTwin(load_scenario(NACL))
    ex = Executor(tw)
    on = lambda item: next(i.on for i in tw.layout if i.id == item)  # noqa: E731
    ex.run(plan_primitive("grasp", POSES, parameters={"object": "solid_bottle", "side": "left"}))
    assert tw.bottle_held and tw.bottle.tilt_deg == 0.0
    # the dispenser's way of pouring: the left wrist turns (bottle_tilt_joints), the bottle follows
    for tilt in range(0, 56):
        tw.command_arm("left", bottle_tilt_joints(POSES, tilt), ex.t)
        for _ in range(4):
            ex.tick()
    assert tw.bottle.tilt_deg == pytest.approx(55.0, abs=1.5)
    assert tw.bottle.poured_g > 0.1
    tw.command_arm("left", bottle_tilt_joints(POSES, 0.0), ex.t)
    for _ in range(60):
        ex.tick()
    assert tw.bottle.tilt_deg < 0.5
    ex.run(plan_primitive("move_to", POSES, parameters={"object": "beaker_main", "target": "stirrer"},
                          beaker_at="balance"))
    assert on("beaker_main") == "stirrer" and not tw.stirrer_on
    ex.run(plan_primitive("press", POSES, parameters={"device": "stirrer"}))
    assert tw.stirrer_on and tw.bottle_held
    assert ("info", "beaker_main placed on the stirrer") in ex.log


def test_the_gripper_left_open_carries_nothing_in_the_twin():
    tw = LabTwin(load_scenario(NACL))
    ex = Executor(tw)
    steps = plan_primitive("move_to", POSES, parameters={"object": "beaker_main", "target": "stirrer"},
                           beaker_at="balance")
    ex.run([s for s in steps if s.label != "close on the beaker"])
    assert next(i.on for i in tw.layout if i.id == "beaker_main") == "balance"


def test_closing_on_an_empty_station_is_reported_and_carries_nothing():
    tw = LabTwin(load_scenario(NACL))
    ex = Executor(tw)
    ex.run(plan_primitive("place", POSES, parameters={"object": "beaker_main", "target": "balance"},
                          beaker_at="stirrer"))   # the scene was wrong: nothing stands on the stirrer
    assert any(level == "warn" and "no beaker stands on the stirrer" in m for level, m in ex.log)
    assert next(i.on for i in tw.layout if i.id == "beaker_main") == "balance"
