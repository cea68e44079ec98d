"""Hardware registry and the rule engine: HALT what cannot run, rectify what can, and no backend skips it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentchemist.plan import HardwareRegistry, Plan, Planner, RegistryError, SceneInfo, rectify_plan, verify_plan
from agentchemist.plan.registry import default_registry_path

PLANNER = Planner()
REG = PLANNER.registry
BASE = PLANNER.plan(
    "Titrate 25 mL of 0.1 M HCl with 0.1 M NaOH until the pH reaches 12.5, acting only when the pH is stable."
).plan


def mutated(change) -> Plan:
    data = BASE.model_dump(mode="json")
    change(data)
    return Plan.model_validate(data)


def codes(findings, severity=None) -> set[str]:
    return {f.code for f in findings if severity is None or f.severity == severity}


class FixedBackend:
    """A stand-in for a model backend that returns a fixed raw plan."""

    name = "fixed"

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.calls = 0

    def propose(self, text, scene, protocol_hint):
        self.calls += 1
        return copy.deepcopy(self.raw)


def test_registry_loads_with_the_bench_limits():
    assert REG.beakers["beaker_100ml"] == 100.0 and REG.ph_range == (0.0, 14.0)
    assert REG.balance_resolution_g == 0.01 and REG.gripper_travel_mm == (0.0, 70.0)
    assert set(REG.joint_limits_deg) == {f"joint{i}" for i in range(1, 7)}
    assert REG.beaker_room_ml("beaker_100ml") == pytest.approx(90.0)
    assert REG.ph_reads_activity  # a glass electrode: titrant needs are sized as it reads
    assert REG.clamp_gripper_mm(75.0) == (70.0, True) and REG.clamp_gripper_mm(12.5) == (12.5, False)
    assert REG.check_joint_deg("joint3", -90.0) and not REG.check_joint_deg("joint3", 10.0)
    with pytest.raises(RegistryError, match="unknown joint"):
        REG.check_joint_deg("joint7", 0.0)
    with pytest.raises(RegistryError):
        REG.clamp_gripper_mm(float("nan"))


def test_registry_file_errors_name_the_key(tmp_path: Path):
    doc = yaml.safe_load(default_registry_path().read_text())
    doc["default_beaker"] = "beaker_9000ml"
    bad = tmp_path / "reg.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(RegistryError, match="beaker_9000ml"):
        HardwareRegistry.load(bad)
    doc = yaml.safe_load(default_registry_path().read_text())
    doc["ph_meter"]["range_ph"] = [14, 0]
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(RegistryError, match="ph_meter.range_ph"):
        HardwareRegistry.load(bad)
    doc = yaml.safe_load(default_registry_path().read_text())
    del doc["balance"]
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(RegistryError, match="missing key"):
        HardwareRegistry.load(bad)


def test_base_plan_is_clean():
    assert [f for f in verify_plan(BASE, REG) if f.severity == "HALT" or f.fix] == []


def test_out_of_range_parameters_are_clamped_and_reported():
    def change(d):
        d["module_instantiation"]["dispenser"]["rate_mm_s"] = 5.0
        d["task_decomposition"][3]["parameters"]["rate_mm_s"] = 5.0
        d["module_instantiation"]["dispenser"]["endpoint_stable_s"] = 0.1
        d["module_instantiation"]["recorder"]["tau"] = 0.99

    plan = mutated(change)
    assert codes(verify_plan(plan, REG), "WARN") >= {"RANGE_CLAMP"}
    fixed, findings = rectify_plan(plan, REG)
    assert not codes(findings, "HALT")
    disp = fixed.module_instantiation.dispenser
    assert disp.rate_mm_s == 0.5 and disp.endpoint_stable_s == 1.0
    assert fixed.module_instantiation.recorder.tau == 0.95
    assert fixed.subtask("titrate").parameters["rate_mm_s"] == 0.5
    assert any("clamped to 0.5" in w for w in fixed.warnings)
    assert [f for f in verify_plan(fixed, REG) if f.fix] == []


def test_no_titration_without_probe_or_draw():
    no_probe = mutated(lambda d: d["parsed_instruction"]["entities"]["instruments"].remove("ph_meter"))
    assert "NO_PROBE" in codes(verify_plan(no_probe, REG), "HALT")

    def drop_draw(d):
        d["task_decomposition"] = [t for t in d["task_decomposition"] if t["primitive"] != "draw"]
        for t in d["task_decomposition"]:
            t["dependencies"] = [x for x in t["dependencies"] if x != "draw_titrant"]

    findings = verify_plan(mutated(drop_draw), REG)
    assert any(
        f.code == "CAUSAL_ORDER" and f.severity == "HALT" and "before the titrant is drawn" in f.message
        for f in findings
    )


def test_missing_dependency_and_list_order_are_rectified():
    def change(d):
        tasks = d["task_decomposition"]
        tasks[3]["dependencies"] = []  # titrate no longer waits for the draw
        tasks[0], tasks[1] = tasks[1], tasks[0]  # and the list is out of order

    plan = mutated(change)
    found = verify_plan(plan, REG)
    assert {"CAUSAL_ORDER", "REORDER"} <= codes(found, "WARN")
    fixed, findings = rectify_plan(plan, REG)
    assert not codes(findings, "HALT")
    assert "draw_titrant" in fixed.subtask("titrate").dependencies
    assert [t.id for t in fixed.task_decomposition][:2] == ["grasp_pipette", "draw_titrant"]


def test_dispensing_in_a_state_before_the_draw_is_a_halt():
    def change(d):
        d["task_decomposition"][3]["fsm_state"] = "initial"
        d["task_decomposition"][3]["dependencies"] = []

    findings = verify_plan(mutated(change), REG)
    assert any(f.code == "CAUSAL_ORDER" and f.severity == "HALT" for f in findings)


def test_capacity_and_reachability_checks_use_the_chemistry():
    big = mutated(lambda d: d["parsed_instruction"]["entities"]["reagents"][1].update(volume_ml=60.0))
    halts = {f.code: f.message for f in verify_plan(big, REG) if f.severity == "HALT"}
    assert "OVERFLOW" in halts and "exceeds the usable 90 mL of the beaker_100ml" in halts["OVERFLOW"]

    def dilute(d):
        d["parsed_instruction"]["entities"]["reagents"][0]["concentration_m"] = 0.01
        d["parsed_instruction"]["target_conditions"]["target_ph"] = 13.5
        d["module_instantiation"]["dispenser"]["target_ph"] = 13.5

    halts = {f.code: f.message for f in verify_plan(mutated(dilute), REG) if f.severity == "HALT"}
    assert "only approaches pH 11.99 (11.95 as a glass electrode reads it)" in halts["UNREACHABLE_TARGET"]


def test_draw_and_cap_are_corrected_to_what_is_needed():
    def change(d):
        d["task_decomposition"][1]["parameters"]["volume_ml"] = 5.0
        d["module_instantiation"]["dispenser"]["max_volume_ml"] = 500.0

    fixed, findings = rectify_plan(mutated(change), REG)
    assert {"DRAW_VOLUME", "MAX_VOLUME"} <= codes(findings, "WARN")
    # 58.3 mL reach pH 12.5 as the electrode reads it: a full draw, all of it may be dispensed
    assert fixed.subtask("draw_titrant").parameters["volume_ml"] == 60.0
    assert 58.3 < fixed.module_instantiation.dispenser.max_volume_ml <= 60.0


def test_no_backend_can_bypass_the_checks():
    raw = BASE.model_dump(mode="json")
    # a model that "forgets" the limits: 500 mL of analyte and a hot dispense rate
    raw["parsed_instruction"]["entities"]["reagents"][1]["volume_ml"] = 500.0
    raw["parsed_instruction"]["initial_conditions"]["analyte_volume_ml"] = 500.0
    backend = FixedBackend(raw)
    out = PLANNER.plan("Titrate HCl with NaOH to pH 12.5", backend=backend)
    assert out.kind == "refusal" and any(r.startswith("HALT OVERFLOW") for r in out.reasons)
    assert backend.calls == 1

    raw = BASE.model_dump(mode="json")
    raw["module_instantiation"]["dispenser"]["rate_mm_s"] = 3.0
    out = PLANNER.plan("Titrate HCl with NaOH to pH 12.5", backend=FixedBackend(raw))
    assert out.kind == "plan" and out.plan.module_instantiation.dispenser.rate_mm_s == 0.5
    assert any(w.startswith("RANGE_CLAMP") for w in out.plan.warnings)

    # a model that claims the bench is complete does not override the scene
    scene = SceneInfo.from_dict({"objects": [{"id": "b", "kind": "beaker", "contains": "hcl"}]})
    out = PLANNER.plan("Titrate HCl with NaOH to pH 12.5", scene, backend=FixedBackend(BASE.model_dump(mode="json")))
    assert out.kind == "refusal" and out.message.startswith("The experiment you wish to complete is")
    assert "pH meter" in out.message and "0.1 M sodium hydroxide" in out.message.split("lacks")[1]


def test_weighing_checks():
    plan = PLANNER.plan("Weigh 2.50 g of NaCl and dissolve it in 50 mL of water.").plan

    fixed, findings = rectify_plan(plan, REG)
    assert not codes(findings, "HALT")
    data = plan.model_dump(mode="json")
    data["module_instantiation"]["dispenser"]["mass_tolerance_g"] = 0.001
    fixed, findings = rectify_plan(Plan.model_validate(data), REG)
    assert fixed.module_instantiation.dispenser.mass_tolerance_g == REG.balance_resolution_g
    data = plan.model_dump(mode="json")
    data["parsed_instruction"]["entities"]["instruments"].remove("balance")
    assert "NO_BALANCE" in codes(verify_plan(Plan.model_validate(data), REG), "HALT")
