"""Reagent library: loading, lookup by alias, text search, literature data, refusal of bad config."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from agentchemist.chemistry import complexometric
from agentchemist.chemistry.reagents import (
    Reagent,
    ReagentConfigError,
    ReagentLibrary,
    SpectatorIon,
    UnknownReagentError,
    default_library,
    default_reagents_path,
)

REQUIRED = {
    "hcl", "naoh", "acetic_acid", "maleic_acid", "phosphoric_acid", "citric_acid", "ammonia",
    "sodium_carbonate", "nacl", "water", "edta", "calcium_chloride", "calconcarboxylic_acid", "kcl",
    "sodium_acetate", "koh", "h2so4",
}  # fmt: skip

# IUPAC 2021 standard atomic weights (abridged), for an independent check of the molar masses.
ATOMIC_WEIGHT = {"H": 1.008, "C": 12.011, "N": 14.007, "O": 15.999, "Na": 22.990, "P": 30.974,
                 "S": 32.06, "Cl": 35.45, "K": 39.098, "Ca": 40.078}  # fmt: skip


def formula_mass(formula: str) -> float:
    """Molar mass of a flat formula such as CH3COONa or C21H14N2O7S (no brackets)."""
    tokens = re.findall(r"([A-Z][a-z]?)(\d*)", formula)
    assert "".join(e + n for e, n in tokens) == formula, f"cannot parse {formula}"
    return sum(ATOMIC_WEIGHT[e] * (int(n) if n else 1) for e, n in tokens)


@pytest.fixture(scope="module")
def lib() -> ReagentLibrary:
    return ReagentLibrary.load()


def test_library_has_every_required_reagent(lib):
    assert REQUIRED <= set(lib.names())
    assert lib.names() == sorted(lib.names())


@pytest.mark.parametrize(
    "typed, name",
    [
        ("HCl", "hcl"),
        ("Hydrochloric Acid", "hcl"),
        ("caustic soda", "naoh"),
        ("Sodium  Hydroxide", "naoh"),
        ("acetic_acid", "acetic_acid"),
        ("Acetic acid", "acetic_acid"),
        ("NH3", "ammonia"),
        ("ammonium hydroxide", "ammonia"),
        ("Na2CO3", "sodium_carbonate"),
        ("sulphuric acid", "h2so4"),
        ("EDTA", "edta"),
        ("disodium EDTA", "disodium_edta"),
        ("Patton-Reeder indicator", "calconcarboxylic_acid"),
        ("distilled water", "water"),
    ],
)
def test_get_is_case_insensitive_and_knows_aliases(lib, typed, name):
    assert lib.get(typed).name == name
    assert typed in lib


def test_unknown_reagent_is_a_value_error_with_close_matches(lib):
    with pytest.raises(UnknownReagentError) as info:
        lib.get("acetic")
    assert isinstance(info.value, ValueError)
    assert "acetic_acid" in info.value.suggestions
    assert "acetic_acid" in str(info.value)
    with pytest.raises(UnknownReagentError, match="unknown reagent 'unobtainium'"):
        lib.get("unobtainium")
    with pytest.raises(UnknownReagentError):
        lib.get(None)  # type: ignore[arg-type]


def test_find_in_text_returns_spans_and_prefers_the_longest_alias(lib):
    text = "Titrate 0.1 M Acetic Acid with sodium hydroxide; then disodium EDTA, NaCl and sodium acetate."
    found = lib.find_in_text(text)
    assert [r.name for r, _, _ in found] == ["acetic_acid", "naoh", "disodium_edta", "nacl", "sodium_acetate"]
    for reagent, start, end in found:
        assert text[start:end].lower() in reagent.aliases
    # whole words only: no match inside another word
    assert lib.find_in_text("the hclx and naohs") == []
    assert lib.find_in_text("") == []


def test_literature_values_match_the_issue(lib):
    expected = {
        "acetic_acid": (4.76,),
        "maleic_acid": (1.92, 6.23),
        "phosphoric_acid": (2.15, 7.20, 12.35),
        "citric_acid": (3.13, 4.76, 6.40),
        "ammonia": (9.25,),
        "sodium_carbonate": (6.35, 10.33),
        "edta": (2.0, 2.67, 6.16, 10.26),
        "calconcarboxylic_acid": (9.26, 13.67),
        "h2so4": (1.99,),
    }
    for name, pka in expected.items():
        assert lib.get(name).pka == pytest.approx(pka), name
    assert lib.get("h2so4").strong_protons == 1
    assert lib.get("edta").log_kf_for("Ca2+") == pytest.approx(10.65)
    assert lib.get("ammonia").charge_fully_protonated == 1


def test_complexometric_constants_agree_with_the_library(lib):
    assert lib.get("edta").pka == complexometric.EDTA_PKA
    assert lib.get("edta").log_kf_for("ca2+") == complexometric.LOG_KF_CA_EDTA
    assert lib.get("calconcarboxylic_acid").pka == complexometric.INDICATOR_PKA
    assert lib.get("calconcarboxylic_acid").log_kf_for("Ca2+") == complexometric.LOG_KF_CA_INDICATOR


def test_every_entry_is_complete_neutral_and_has_a_correct_molar_mass(lib):
    for name in lib.names():
        r = lib.get(name)
        assert r.literature is not None and r.literature.source, name
        assert r.aliases and r.display_name and r.formula
        net = r.spectator_charge_per_mol + r.strong_protons + r.system_charge_as_added
        assert net == 0, name
        if "·" in r.formula:  # hydrate: salt part plus waters
            salt, water = r.formula.split("·")
            count = int(water[: -len("H2O")] or 1)
            salt = salt.replace("Y", "C10H12N2O8")  # Y4- is EDTA less its four protons
            mass = formula_mass(salt) + count * formula_mass("H2O")
        else:
            mass = formula_mass(r.formula)
        assert r.molar_mass_g_mol == pytest.approx(mass, abs=0.01), name


def test_reagent_refuses_a_charge_imbalance_and_bad_fields():
    good = dict(
        name="x", display_name="x", formula="X", aliases=("x",), kind="salt", pka=(), molar_mass_g_mol=1.0
    )
    Reagent(**good)
    with pytest.raises(ReagentConfigError, match="not neutral"):
        Reagent(**{**good, "spectator_ions": (SpectatorIon("Na+", 1),)})
    with pytest.raises(ReagentConfigError, match="kind"):
        Reagent(**{**good, "kind": "acidic"})
    with pytest.raises(ReagentConfigError, match="ascending"):
        Reagent(**{**good, "kind": "weak_acid", "pka": (7.0, 2.0), "protons_as_added": 2})
    with pytest.raises(ReagentConfigError, match="molar_mass"):
        Reagent(**{**good, "molar_mass_g_mol": -1.0})
    with pytest.raises(ReagentConfigError, match="does not fit kind"):
        Reagent(**{**good, "kind": "strong_acid"})


def _write(tmp_path: Path, reagents: dict) -> Path:
    path = tmp_path / "reagents.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "reagents": reagents}), encoding="utf-8")
    return path


ENTRY = {
    "display_name": "sodium chloride",
    "formula": "NaCl",
    "kind": "salt",
    "molar_mass_g_mol": 58.443,
    "spectator_ions": [{"ion": "Na+", "charge": 1}, {"ion": "Cl-", "charge": -1}],
    "literature": {"pka": [], "source": "test"},
}


def test_loader_names_file_and_key_on_a_typo(tmp_path):
    path = _write(tmp_path, {"nacl": {**ENTRY, "molar_mas_g_mol": 1.0}})
    with pytest.raises(ReagentConfigError) as info:
        ReagentLibrary.load(path)
    message = str(info.value)
    assert str(path) in message and "reagents.nacl" in message and "molar_mas_g_mol" in message
    assert "did you mean 'molar_mass_g_mol'" in message


def test_loader_refuses_missing_fields_duplicates_and_bad_yaml(tmp_path):
    missing = {k: v for k, v in ENTRY.items() if k != "literature"}
    with pytest.raises(ReagentConfigError, match="missing required key 'literature'"):
        ReagentLibrary.load(_write(tmp_path, {"nacl": missing}))
    with pytest.raises(ReagentConfigError, match="alias 'salt'"):
        ReagentLibrary.load(_write(tmp_path, {"nacl": {**ENTRY, "aliases": ["salt"]},
                                              "kcl": {**ENTRY, "formula": "KCl", "display_name": "kcl",
                                                      "aliases": ["salt"]}}))  # fmt: skip
    with pytest.raises(ReagentConfigError, match="not neutral"):
        ReagentLibrary.load(_write(tmp_path, {"nacl": {**ENTRY, "strong_protons": 1}}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("reagents: [unclosed", encoding="utf-8")
    with pytest.raises(ReagentConfigError, match="invalid YAML"):
        ReagentLibrary.load(bad)
    with pytest.raises(ReagentConfigError, match="cannot read"):
        ReagentLibrary.load(tmp_path / "absent.yaml")


def test_config_dir_override_and_cached_default(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTCHEMIST_CONFIG_DIR", str(tmp_path))
    assert default_reagents_path() == tmp_path / "reagents.yaml"
    monkeypatch.delenv("AGENTCHEMIST_CONFIG_DIR")
    assert default_reagents_path().parts[-2:] == ("config", "reagents.yaml")
    assert default_library() is default_library()


def test_docstring_examples_run():
    import doctest

    from agentchemist.chemistry import equilibrium, reagents

    for module in (reagents, equilibrium, complexometric):
        assert doctest.testmod(module).failed == 0, module.__name__
