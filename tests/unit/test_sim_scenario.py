"""Scenario loading and validation: every shipped file loads; bad files are refused with file, key, problem."""
import copy
from pathlib import Path

import pytest
import yaml

from agentchemist.sim.errors import ScenarioError
from agentchemist.sim.scenario import load_scenario, scenario_from_dict, read_scenario_yaml
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"
SPEC = REPO.parent / "shared" / "SPEC.md"


def _raw() -> dict:
    # read with the scenario loader's YAML rules (``on:`` is a key, not a boolean)
    return read_scenario_yaml(SCENARIOS / "hcl_naoh.yaml")


def refused(data: dict, source: str = "bad.yaml") -> str:
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(data, source=source)
    return str(info.value)


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_scenario_loads(path: Path):
    sc = load_scenario(path)
    assert sc.name == path.stem
    assert sc.expected.outcome in ("complete", "refuse", "ask", "abort")


def test_hcl_naoh_matches_the_paper():
    sc = load_scenario(SCENARIOS / "hcl_naoh.yaml")
    assert sc.seed == 1
    assert sc.beaker.volume_ml == 25.0 and sc.beaker.solution == {"hcl": 0.1}
    assert sc.titrant == {"naoh": 0.1} and sc.expected.target_ph == 12.5
    assert sc.pipette.drop_volume_ml == 0.046875
    assert sc.stirrer.on is True  # "on:" parsed as a key, not YAML 1.1's boolean
    assert all(it.on is None or isinstance(it.on, str) for it in sc.all_items())
    if not SPEC.exists():
        pytest.skip("shared/SPEC.md is not beside the repository")
    spec = SPEC.read_text()
    start = spec.index('Instruction: "') + len('Instruction: "')
    quoted = " ".join(spec[start:spec.index('"\n', start)].split())
    assert sc.instruction == quoted


def test_missing_pipette_scenario_says_what_is_missing():
    sc = load_scenario(SCENARIOS / "missing_pipette.yaml")
    pip = next(i for i in sc.all_items() if i.id == "pipette")
    assert pip.present is False
    assert sc.expected.outcome == "refuse" and sc.expected.missing == ["pipette"]


def test_unknown_reagent_is_refused_with_close_matches():
    data = _raw()
    data["beaker"]["solution"] = {"hcll": 0.1}
    msg = refused(data)
    assert "bad.yaml" in msg and "beaker.solution" in msg and "hcll" in msg and "'hcl'" in msg


def test_unknown_titrant_reagent_is_refused():
    data = _raw()
    data["titrant"] = {"sodium hydroxyde": 0.1}
    msg = refused(data)
    assert "titrant" in msg and "naoh" in msg


def test_aliases_are_normalised_to_canonical_names():
    data = _raw()
    data["titrant"] = {"sodium hydroxide": 0.1}
    data["beaker"]["solution"] = {"Hydrochloric Acid": 0.1}
    sc = scenario_from_dict(data)
    assert sc.titrant == {"naoh": 0.1} and sc.beaker.solution == {"hcl": 0.1}


def test_negative_volume_is_refused_with_its_key_path():
    data = _raw()
    data["beaker"]["volume_ml"] = -5
    msg = refused(data)
    assert "beaker.volume_ml" in msg and "-5" in msg


def test_negative_concentration_and_overfull_beaker_are_refused():
    data = _raw()
    data["beaker"]["solution"] = {"hcl": -0.1}
    assert "concentration" in refused(data)
    data = _raw()
    data["beaker"]["volume_ml"] = 150
    assert "exceeds capacity_ml" in refused(data)


def test_missing_required_field_is_named():
    data = _raw()
    del data["seed"]
    msg = refused(data)
    assert "seed" in msg and "missing" in msg
    data = _raw()
    del data["beaker"]["capacity_ml"]
    assert "beaker.capacity_ml" in refused(data)


def test_typo_in_a_key_is_refused_with_the_close_match():
    data = _raw()
    data["pipette"]["drop_volum_ml"] = 0.05
    msg = refused(data)
    assert "pipette.drop_volum_ml" in msg and "unknown key" in msg and "drop_volume_ml" in msg
    data = _raw()
    data["stirer"] = {"on": True}
    assert "stirer" in refused(data) and "'stirrer'" in refused(data)


def test_file_name_appears_in_errors_from_disk(tmp_path):
    data = _raw()
    data["probe"]["tau_s"] = 0
    bad = tmp_path / "typo_scenario.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError) as info:
        load_scenario(bad)
    assert str(bad) in str(info.value) and "probe.tau_s" in str(info.value)


def test_unreadable_and_malformed_files_are_scenario_errors(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "nope.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="invalid YAML"):
        load_scenario(broken)
    listy = tmp_path / "list.yaml"
    listy.write_text("- 1\n- 2\n")
    with pytest.raises(ScenarioError, match="mapping"):
        load_scenario(listy)


def test_cross_references_are_checked():
    data = _raw()
    data["layout"]["items"][2]["on"] = "stirer"
    assert "on names 'stirer'" in refused(data)
    data = _raw()
    data["layout"]["items"] = [i for i in data["layout"]["items"] if i["id"] != "ph_probe"]
    assert "probe.id" in refused(data)
    data = _raw()
    data["layout"]["items"].append(copy.deepcopy(data["layout"]["items"][0]))
    assert "duplicate" in refused(data)
    data = _raw()
    data["layout"]["items"].append({"id": "mystery", "kind": "beaker", "position": [10, 200]})
    assert "marker table" in refused(data)
    data["layout"]["items"][-1]["marker_id"] = 3  # the stirrer's tag
    assert "marker id 3" in refused(data)
    data["layout"]["items"][-1]["marker_id"] = 30
    scenario_from_dict(data)


def test_positions_outside_the_image_are_refused():
    data = _raw()
    data["layout"]["items"][0]["position"] = [400, 10]
    assert "outside the 320x240" in refused(data)


def test_fault_specs_are_validated():
    data = _raw()
    data["faults"] = [{"kind": "ph_dropuot", "at_s": 1.0}]
    assert "faults[0].kind" in refused(data)
    data["faults"] = [{"kind": "labware_missing", "at_s": 1.0, "params": {}}]
    assert "needs params.id" in refused(data)
    data["faults"] = [{"kind": "labware_missing", "at_s": 1.0, "params": {"id": "pipete"}}]
    assert "'pipette'" in refused(data)
    data["faults"] = [{"kind": "labware_moved", "at_s": 1.0, "params": {"id": "beaker_main"}}]
    assert "position" in refused(data)
    data["faults"] = [{"kind": "ph_dropout", "at_s": -1.0}]
    assert "faults[0].at_s" in refused(data)
    data["faults"] = [{"kind": "gripper_stall", "at_s": 1.0, "params": {"side": "middle"}}]
    assert "side" in refused(data)
    data["faults"] = [{"kind": "ph_dropout", "at_s": 1.0, "params": {"id": "x"}}]
    assert "does not take" in refused(data)
    data["faults"] = [{"kind": "gripper_stall", "at_s": 1.0, "duration_s": 2.0, "params": {"side": "left"}}]
    assert scenario_from_dict(data).faults[0].params == {"side": "left"}


def test_non_finite_numbers_are_refused():
    data = _raw()
    data["probe"]["noise_sd"] = float("nan")
    assert "probe.noise_sd" in refused(data)


def test_unknown_indicator_is_refused():
    data = _raw()
    data["beaker"]["indicator"] = {"name": "phenolphtalein", "conc_M": 1e-5}
    msg = refused(data)
    assert "beaker.indicator.name" in msg and "phenolphthalein" in msg


def test_several_problems_are_reported_together():
    data = _raw()
    data["seed"] = -1
    data["beaker"]["volume_ml"] = -1
    msg = refused(data)
    assert "seed" in msg and "beaker.volume_ml" in msg and msg.count("bad.yaml") == 2


def test_audio_synth_options_are_checked_at_load():
    data = _raw()
    data["audio"] = {"snr_db": 15.0, "synth": {"room_noise_dbfs": -45.0}}
    assert scenario_from_dict(data).audio.synth == {"room_noise_dbfs": -45.0}
    data["audio"]["synth"] = {"room_noise_db": -45.0}
    assert "room_noise_dbfs" in refused(data)
    data["audio"]["synth"] = {"room_noise_dbfs": 3.0}
    assert "audio.synth" in refused(data)
    data["audio"]["synth"] = {"seed": 3}
    assert "seed" in refused(data)


def test_inventory_blocks_are_validated_and_abort_needs_its_kind():
    """`inventory:` (what the lab believes the containers hold) is checked like config/inventory.yaml; an
    abort scenario without a twin fault names the one halting anomaly kind."""
    data = read_scenario_yaml(SCENARIOS / "fault_mislabelled_titrant.yaml")
    assert "unobtainium" in refused({**data, "inventory": {"titrant_bottle": {"reagent": "unobtainium"}}})
    assert "halting anomaly kind" in refused({**data, "expected": {"outcome": "abort"}})
