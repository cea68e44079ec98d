"""The lab inventory (agentchemist.workcell.inventory): what each tagged container holds, validated and within
the file limits; the twin's inventory (sim/lab_inventory.py) layers labels and the scenario's block on it."""
from __future__ import annotations

import pytest

from agentchemist.workcell.inventory import InventoryError, inventory_from_dict, load_inventory
from agentchemist.sim.lab_inventory import label_entry, twin_inventory
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"


def test_the_shipped_inventory_names_the_titrant_bottle_by_its_tag():
    inv = load_inventory()
    entry = inv.for_tag(6)  # titrant_bottle's tag (workcell/tags.py)
    assert entry is inv.for_labware("titrant_bottle")
    assert (entry.reagent, entry.concentration_m, entry.describe()) == ("naoh", 0.1, "0.1 M sodium hydroxide")
    assert entry.as_scene()["concentration_m"] == 0.1 and entry.lot


def test_keys_by_tag_id_units_and_aliases():
    inv = inventory_from_dict({"items": {6: {"reagent": "caustic potash", "concentration": 250, "unit": "mM"},
                                         "21": {"reagent": "HCl", "concentration": 1}}})
    assert inv.for_labware("titrant_bottle").reagent == "koh"
    assert inv.for_tag(6).concentration_m == pytest.approx(0.25)
    assert inv.for_tag(21, "acid_bottle").describe() == "1 M hydrochloric acid"


@pytest.mark.parametrize("items, words", [
    ({"titrant_bottle": {"reagent": "unobtainium"}}, "not in config/reagents.yaml"),
    ({"titrant_bottle": {"reagent": "naoh", "concentration": -1}}, "greater than 0"),
    ({"titrant_bottle": {"reagent": "naoh", "concentration": 30}}, "<= 20 M"),
    ({"titrant_bottle": {"reagent": "naoh", "concentration": 0.1, "unit": "ppm"}}, "unit"),
    ({"titrant_bottle": {"reagent": "naoh", "colour": "red"}}, "colour"),
    ({"titrant_bottle": {"reagent": "naoh"}, 6: {"reagent": "koh"}}, "listed twice"),
    ({99: {"reagent": "naoh"}}, "tag id 99"),
    ({"bad key!": {"reagent": "naoh"}}, "neither a labware id"),
])
def test_bad_entries_are_refused_naming_the_entry(items, words):
    with pytest.raises(InventoryError, match="demo.yaml") as err:
        inventory_from_dict({"items": items}, "demo.yaml")
    assert words in str(err.value)


def test_hostile_or_broken_files_are_refused_quickly(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n")
    big = tmp_path / "big.yaml"
    big.write_text("items:\n" + "".join(f"  tag_{i}: {{reagent: naoh}}\n" for i in range(20000)))
    for file, words in ((bomb, "alias"), (big, "larger than"), (tmp_path / "none.yaml", "cannot read"),
                        (tmp_path, "cannot read")):
        with pytest.raises(InventoryError, match=words):
            load_inventory(file)
    nan = tmp_path / "nan.yaml"
    nan.write_text("items: {titrant_bottle: {reagent: naoh, concentration: .nan}}\n")
    with pytest.raises(InventoryError, match="titrant_bottle"):
        load_inventory(nan)


def test_labels_name_reagents_and_concentrations():
    assert label_entry("NaOH 0.1 M") == {"reagent": "naoh", "concentration": 0.1}
    assert label_entry("EDTA 10 mM") == {"reagent": "edta", "concentration": pytest.approx(0.01)}
    assert label_entry("NaCl") == {"reagent": "nacl"}
    assert label_entry("PhPh") is None and label_entry("") is None


def test_the_twin_believes_its_labels_then_its_scenario_block():
    assert twin_inventory(load_scenario(SCENARIOS / "ca_edta.yaml")).for_tag(6).describe() == "0.01 M EDTA"
    mislabelled = load_scenario(SCENARIOS / "fault_mislabelled_titrant.yaml")
    assert mislabelled.titrant == {"naoh": 0.5}  # really in the bottle
    assert twin_inventory(mislabelled).for_tag(6).concentration_m == 0.1  # what the lab believes
    wrong = load_scenario(SCENARIOS / "fault_wrong_titrant.yaml")
    assert twin_inventory(wrong).for_tag(6).describe() == "0.5 M potassium hydroxide"
