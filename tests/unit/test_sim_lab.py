"""LabTwin as a whole: determinism, commands (clamped and reported), joint states, audio truth, JSON truth."""
import json
import math

import numpy as np
import pytest

from agentchemist.sim.errors import SimCommandError
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.robot import ARM_JOINT_LIMITS_RAD
from agentchemist.sim.scenario import load_scenario, scenario_from_dict, read_scenario_yaml
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def twin(seed: int = 1) -> LabTwin:
    data = read_scenario_yaml(SCENARIOS / "hcl_naoh.yaml")
    data["seed"] = seed
    data["faults"] = [{"kind": "extra_drop", "at_s": 9.0}, {"kind": "noise_burst", "at_s": 4.0, "duration_s": 0.2}]
    return LabTwin(scenario_from_dict(data))


def session(tw: LabTwin) -> dict:
    """A fixed call sequence touching every output: readings, images, audio, truth."""
    out: dict = {"ph": [], "temp": [], "audio": [], "img": []}
    tw.command_gripper("right", 0.0605, 0.0)
    tw.draw("naoh", 30.0, 1.0)
    x, t = 60.0, 1.0
    while t < 10.0:
        x -= 0.01
        t = round(t + 0.05, 10)
        tw.command_gripper("right", x / 1000.0, t)
        if int(round(t * 20)) % 10 == 0:
            out["ph"].append(tw.read_ph(t).value)
            out["temp"].append(tw.read_temperature(t).value)
    for side in ("left", "right"):
        out["audio"].append(tw.audio(side, 0.0, 48000 * 10))
    for cam in ("front", "right_wrist"):
        out["img"].append(tw.render_camera(cam, 10.0))
    out["truth"] = json.dumps(tw.truth(), sort_keys=True)
    return out


def test_same_seed_gives_bit_identical_outputs():
    a, b = session(twin(1)), session(twin(1))
    assert a["ph"] == b["ph"] and a["temp"] == b["temp"]
    assert all(np.array_equal(x, y) for x, y in zip(a["audio"], b["audio"]))
    assert all(np.array_equal(x, y) for x, y in zip(a["img"], b["img"]))
    assert a["truth"] == b["truth"]
    c = session(twin(2))
    assert c["ph"] != a["ph"] and not np.array_equal(c["audio"][1], a["audio"][1])
    assert not np.array_equal(c["img"][0], a["img"][0])


def test_stepping_in_chunks_or_at_once_gives_the_same_physics():
    fine, coarse = LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml")), LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml"))
    for tw in (fine, coarse):
        tw.command_gripper("right", 0.0605, 0.0)
        tw.draw("naoh", 30.0, 1.0)
        tw.command_gripper("right", 0.0585, 1.0)
    for k in range(1, 301):
        fine.step(1.0 + 0.01 * k)
    coarse.step(4.0)
    tf, tc = fine.truth(), coarse.truth()
    assert [d["time"] for d in tf["drops"]] == pytest.approx([d["time"] for d in tc["drops"]], abs=1e-9)
    assert tf["true_ph"] == pytest.approx(tc["true_ph"], abs=1e-12)
    assert tf["probe_ph"] == pytest.approx(tc["probe_ph"], abs=1e-9)


def test_gripper_commands_are_clamped_and_reported():
    tw = twin()
    res = tw.command_gripper("left", 0.09, 0.0)
    assert res.accepted and res.clamped and res.accepted_value == 0.07 and "0.07" in res.reason
    res = tw.command_gripper("left", -0.01, 0.1)
    assert res.clamped and res.accepted_value == 0.0
    res = tw.command_gripper("left", 0.03, 0.2)
    assert not res.clamped and res.reason == ""
    tw.step(5.0)
    assert tw.gripper_opening_m("left") == pytest.approx(0.03, abs=1e-9)
    with pytest.raises(SimCommandError):
        tw.command_gripper("middle", 0.03, 5.0)
    with pytest.raises(SimCommandError):
        tw.command_gripper("left", float("nan"), 5.0)
    with pytest.raises(SimCommandError):
        tw.step(float("inf"))


def test_gripper_measured_opening_lags_the_command():
    tw = twin()
    tw.command_gripper("left", 0.02, 0.0)
    tw.step(0.1)
    mid = tw.gripper_opening_m("left")
    assert 0.02 < mid < 0.07
    assert mid == pytest.approx(0.07 - 0.05 * 0.1, abs=1e-9)  # speed-limited at 50 mm/s
    tw.step(3.0)
    assert tw.gripper_opening_m("left") == pytest.approx(0.02, abs=1e-9)


def test_arm_commands_are_clamped_to_the_piper_limits_and_followed():
    tw = twin()
    res = tw.command_arm("right", [3.0, -0.5, 0.5, 0.0, 2.0, 0.1], 0.0)
    assert res.clamped
    assert res.accepted_value == [2.618, 0.0, 0.0, 0.0, 1.22, 0.1]
    assert "joint1" in res.reason and "joint5" in res.reason and "joint6" not in res.reason
    tw.step(0.3)
    names, values = tw.joint_states()
    assert names[7:13] == [f"right_joint{i}" for i in range(1, 7)] and names[13] == "right_gripper"
    assert values[7] == pytest.approx(2.618 * (1 - math.exp(-1.0)), abs=1e-9)  # first-order, tau 0.3 s
    tw.step(10.0)
    assert tw.joint_states()[1][7:13] == pytest.approx([2.618, 0.0, 0.0, 0.0, 1.22, 0.1], abs=1e-9)
    with pytest.raises(SimCommandError):
        tw.command_arm("right", [0.0] * 5, 10.0)
    with pytest.raises(SimCommandError):
        tw.command_arm("right", [0.0, 0.0, 0.0, float("nan"), 0.0, 0.0], 10.0)
    assert all(lo < hi for lo, hi in ARM_JOINT_LIMITS_RAD)


def test_joint_states_names_and_gripper_units():
    names, values = twin().joint_states()
    assert len(names) == len(values) == 14
    assert names[:7] == [*(f"left_joint{i}" for i in range(1, 7)), "left_gripper"]
    assert values[6] == pytest.approx(0.07) and values[13] == pytest.approx(0.07)


def test_droplet_sounds_are_scheduled_at_each_landing():
    tw = twin()
    tw.command_gripper("right", 0.0605, 0.0)
    tw.draw("naoh", 30.0, 1.0)
    tw.command_gripper("right", 0.0595, 1.0)
    tw.step(8.0)
    landings = [d["time"] for d in tw.truth()["drops"]]
    heard = [e.time for e in tw.audio_truth("right") if e.kind == "droplet"]
    assert heard == pytest.approx(landings)
    assert all(e.kind != "droplet" for e in tw.audio_truth("left"))


def test_fast_gripper_motion_whines_but_the_dispensing_creep_does_not():
    tw = twin()
    tw.command_gripper("left", 0.01, 0.0)  # 60 mm at full speed
    whine = [e for e in tw.audio_truth("left") if e.kind == "motor_whine"]
    assert len(whine) == 1 and whine[0].time == 0.0 and 1.0 < whine[0].duration < 1.5
    tw.command_gripper("right", 0.0605, 2.0)
    n = len(tw.audio_truth("right"))
    x, t = 60.5, 5.0
    for _ in range(100):  # 0.1 mm/s creep
        x -= 0.005
        t += 0.05
        tw.command_gripper("right", x / 1000.0, t)
    assert all(e.kind != "motor_whine" for e in tw.audio_truth("right")[n:])


def test_late_commands_apply_now_and_time_never_runs_backwards():
    tw = twin()
    tw.step(5.0)
    tw.command_gripper("left", 0.02, 3.0)  # stamped in the past
    assert tw.t == 5.0
    tw.step(2.0)
    assert tw.t == 5.0


def test_truth_is_json_serialisable_and_complete():
    tw = twin()
    tw.step(10.0)
    truth = json.loads(json.dumps(tw.truth()))
    for key in ("drops", "dispensed_ml", "beaker_volume_ml", "true_ph", "ph_history", "faults", "events",
                "audio_events", "overflow_ml"):
        assert key in truth
    assert [f["kind"] for f in truth["faults"]] == ["noise_burst", "extra_drop"]
    assert truth["true_ph"] == pytest.approx(1.107, abs=0.005)  # 0.1 M HCl with Davies activity


def test_stirrer_and_labware_moves():
    tw = LabTwin(load_scenario(SCENARIOS / "nacl_weighing.yaml"))
    assert tw.set_stirrer(True, 1.0).accepted_value is True
    res = tw.move_labware("beaker_main", 2.0, on="stirrer")
    beaker = next(i for i in tw.layout if i.id == "beaker_main")
    assert res.accepted and beaker.on == "stirrer" and beaker.position[0] == 214
    with pytest.raises(SimCommandError):
        tw.move_labware("flask", 3.0)
    with pytest.raises(SimCommandError):
        tw.move_labware("beaker_main", 3.0, on="shelf")


def test_new_sample_sets_the_bench_up_again_and_keeps_the_truth_log():
    tw = LabTwin(load_scenario(SCENARIOS / "hcl_naoh.yaml"))
    tw.command_gripper("right", 0.0605, 0.0)
    tw.draw("naoh", 30.0, 1.0)
    x, t = 60.0, 1.0
    while tw.truth_summary()["drops_landed"] < 40:
        x -= 0.01
        t = round(t + 0.05, 10)
        tw.command_gripper("right", x / 1000.0, t)
    tw.move_labware("beaker_main", t, position=(185.0, 188.0))
    before = tw.truth()
    ph_used = before["true_ph"]
    assert ph_used > 1.15
    while tw._hand.falling:  # wait for the drop in flight; the bench is not swapped under a falling drop
        assert not tw.new_sample(t).accepted
        t = round(t + 0.05, 10)
    res = tw.new_sample(t)
    assert res.accepted and res.accepted_value == pytest.approx(25.0)
    after = tw.truth()
    assert after["samples"] == 2 and after["t"] == pytest.approx(t)
    assert after["true_ph"] == pytest.approx(1.107, abs=0.01)  # a fresh 0.1 M HCl sample
    assert after["drops_landed"] == before["drops_landed"] and len(after["drops"]) == len(before["drops"])
    assert not tw.pipette_held and tw.pipette.content_ml == 0.0
    assert tw.gripper_opening_m("right") == pytest.approx(0.07)
    assert next(i for i in tw.layout if i.id == "beaker_main").position == (160, 188)
    assert any(e["kind"] == "new_sample" for e in after["events"])
    # the probe moves into the fresh sample with its own time constant, not at once
    assert tw.read_ph(t + 0.05).value > (ph_used + 1.107) / 2
    assert tw.read_ph(t + 30.0).value == pytest.approx(1.107, abs=0.05)
