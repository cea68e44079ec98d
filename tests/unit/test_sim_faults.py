"""Each injectable fault has its effect, from the scenario file or injected at run time."""
import numpy as np
import pytest

from agentchemist.sim.errors import ScenarioError, SimCommandError
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import scenario_from_dict, read_scenario_yaml
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def twin(faults=(), **pipette) -> LabTwin:
    data = read_scenario_yaml(SCENARIOS / "hcl_naoh.yaml")
    data["faults"] = list(faults)
    data["pipette"].update(pipette)
    return LabTwin(scenario_from_dict(data))


def ready(tw: LabTwin) -> float:
    tw.command_gripper("right", 0.0605, 0.0)
    assert tw.draw("naoh", 55.0, 1.0).accepted
    return 1.0


def squeeze(tw: LabTwin, t: float, from_mm: float, to_mm: float, rate_mm_s: float = 0.1, dt: float = 0.05) -> float:
    x = from_mm
    while x > to_mm + 1e-12:
        x = max(to_mm, x - rate_mm_s * dt)
        t += dt
        tw.command_gripper("right", x / 1000.0, t)
    return t


def test_ph_dropout_from_the_scenario_file():
    tw = twin([{"kind": "ph_dropout", "at_s": 5.0, "duration_s": 3.0}])
    assert tw.read_ph(4.9) is not None
    assert tw.read_ph(5.0) is None and tw.read_temperature(6.0) is None and tw.read_ph(7.99) is None
    assert tw.read_ph(8.0) is not None
    kinds = [e["kind"] for e in tw.truth()["events"]]
    assert "fault:ph_dropout" in kinds and "fault_end:ph_dropout" in kinds
    assert tw.truth()["faults"][0]["fired_at"] == pytest.approx(5.0)


def test_ph_stuck_freezes_the_reading_while_the_solution_changes():
    tw = twin()
    t = ready(tw)
    tw.inject_fault("ph_stuck", 2.0, duration_s=20.0)
    t = squeeze(tw, 2.0, 60.5, 59.0)
    vals = {tw.read_ph(t + k * 0.5).value for k in range(10)}
    assert len(vals) == 1  # frozen, no noise
    assert tw.truth()["drops_landed"] > 15
    later = [tw.read_ph(23.0 + k * 0.5).value for k in range(10)]
    assert len(set(later)) > 1
    assert later[-1] > next(iter(vals))  # NaOH went in while the meter was stuck


def test_drop_fails_makes_the_next_drop_cling_and_fall_merged():
    tw = twin(drop_volume_sd=0.0, formation_delay_s=0.0)
    t = ready(tw)
    tw.inject_fault("drop_fails", t + 0.5)
    t = squeeze(tw, t + 0.5, 60.0, 59.0)
    tw.step(t + 3.0)
    truth = tw.truth()
    vols = [d["volume_ml"] for d in truth["drops"]]
    assert pytest.approx(2 * 0.046875, abs=1e-6) == vols[0]  # the clinging drop fell with the next one
    assert all(v == pytest.approx(0.046875, abs=1e-6) for v in vols[1:])
    failed = [e for e in truth["events"] if e["kind"] == "drop_failed"]
    assert len(failed) == 1
    droplets = [e for e in tw.audio_truth("right") if e.kind == "droplet"]
    assert len(droplets) == len(vols)
    assert all(abs(e.time - failed[0]["time"]) > 0.05 for e in droplets)  # nothing heard when it clung


def test_extra_drop_falls_without_any_squeeze():
    tw = twin()
    t = ready(tw)
    tw.step(5.0)
    assert tw.truth()["drops_landed"] == 0
    tw.inject_fault("extra_drop", 5.0)
    tw.step(6.0)
    truth = tw.truth()
    assert truth["drops_landed"] == 1 and truth["drops"][0]["cause"] == "extra_drop"
    assert truth["beaker_volume_ml"] == pytest.approx(25.0 + truth["drops"][0]["volume_ml"])
    assert [e.kind for e in tw.audio_truth("right")].count("droplet") == 1


def test_noise_burst_is_heard_on_the_contact_microphones():
    tw = twin()
    tw.step(1.0)
    quiet = tw.audio("left", 0.0, 48000).astype(float)
    tw.inject_fault("noise_burst", 1.5, duration_s=0.5, side="left")
    tw.step(2.5)
    loud = tw.audio("left", 1.5, 24000).astype(float)
    assert np.sqrt(np.mean(loud**2)) > 3 * np.sqrt(np.mean(quiet**2))
    assert [e.kind for e in tw.audio_truth("left")] == ["noise_burst"]
    assert "noise_burst" not in [e.kind for e in tw.audio_truth("right")]


def test_gripper_stall_holds_the_gripper_and_stops_the_drops():
    tw = twin()
    t = ready(tw)
    tw.step(2.0)
    held_at = tw.gripper_opening_m("right")
    tw.inject_fault("gripper_stall", 2.0, duration_s=5.0)
    t = squeeze(tw, 2.0, 60.5, 59.0, rate_mm_s=0.5)
    assert tw.gripper_opening_m("right") == held_at
    assert tw.truth()["drops_landed"] == 0
    tw.step(8.0)  # stall over: the gripper catches up with its last command
    assert tw.gripper_opening_m("right") == pytest.approx(0.059, abs=1e-6)
    tw.step(10.0)  # the 1 mm of squeeze it missed goes out at once: a few big drops (pipette docstring)
    truth = tw.truth()
    assert truth["dispensed_ml"] + truth["pipette"]["pendant_ml"] == pytest.approx(1.0, abs=1e-6)


def test_missing_pipette_cannot_be_drawn_from_and_comes_back():
    tw = twin([{"kind": "labware_missing", "at_s": 0.5, "duration_s": 10.0, "params": {"id": "pipette"}}])
    tw.command_gripper("right", 0.0605, 0.0)
    tw.step(1.0)
    res = tw.draw("naoh", 10.0, 1.0)
    assert not res.accepted and "not on the bench" in res.reason
    assert not [i for i in tw.layout if i.id == "pipette"][0].present
    tw.step(11.0)
    assert [i for i in tw.layout if i.id == "pipette"][0].present


def test_moved_beaker_makes_drops_spill_on_the_bench():
    tw = twin()
    t = ready(tw)
    tw.inject_fault("labware_moved", 2.0, id="beaker_main", offset=[60, 0])
    t = squeeze(tw, 2.0, 60.5, 59.5)
    tw.step(t + 2.0)
    truth = tw.truth()
    assert truth["drops"] and all(d["fate"] == "spilled" for d in truth["drops"])
    assert truth["beaker_volume_ml"] == pytest.approx(25.0)
    assert "spill" in [e["kind"] for e in truth["events"]]
    assert [e.kind for e in tw.audio_truth("right")].count("droplet") == 0


def test_missing_ph_meter_gives_no_reading():
    tw = twin([{"kind": "labware_missing", "at_s": 1.0, "params": {"id": "ph_meter"}}])
    assert tw.read_ph(0.5) is not None
    assert tw.read_ph(1.5) is None


def test_bad_injections_are_refused():
    tw = twin()
    with pytest.raises(ScenarioError, match="kind"):
        tw.inject_fault("ph_wobble", 1.0)
    with pytest.raises(SimCommandError, match="pipete"):
        tw.inject_fault("labware_missing", 1.0, id="pipete")
    with pytest.raises(ScenarioError, match="needs params.id"):
        tw.inject_fault("labware_missing", 1.0)
    with pytest.raises(ScenarioError, match="duration_s"):
        tw.inject_fault("ph_dropout", 1.0, duration_s=-2.0)
