"""The scenario library (config/scenarios/, issue 11): every file loads, is named after itself and says
what it is; the planner's answer to its instruction, on the scene the front camera shows (as the planner
node gets it from DescribeScene), is the one its `expected` block names; complete titrations can reach
their target as the twin's probe reads it; each fault scenario fires while the robot is dispensing and
names one anomaly kind per fault. Fast and ROS-free: the twin renders one front image per scenario, the
planner runs in process. Known system gaps are strict xfails with the planner's own answer as reason."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import default_library
from agentchemist.perception.scene import describe_scene
from agentchemist.plan.feasibility import titrant_for_ph
from agentchemist.plan.planner import PlanOutcome, plan_instruction
from agentchemist.plan.scene import SceneInfo
from agentchemist.scoring.run_score import reason_matches
from agentchemist.sim.faults import WINDOW_KINDS
from agentchemist.sim.lab import BEAKER_HALF_WIDTH_FRACTION, LabTwin
from agentchemist.sim.lab_inventory import twin_inventory
from agentchemist.sim.markers import default_marker_id, detect_markers
from agentchemist.sim.scenario import FAULT_KINDS, Scenario, load_scenario
from tests.conftest import REPO

LIBRARY = REPO / "config" / "scenarios"
FILES = sorted(LIBRARY.glob("*.yaml"))

# Twin fault kind -> the Anomaly.kind a correct system raises for it (issue 11).
FAULT_ANOMALY = {
    "ph_dropout": "sensor_timeout",
    "ph_stuck": "ph_stuck",
    "drop_fails": "no_drop",
    "extra_drop": "unexpected_drop",
    "noise_burst": "audio_noise",
    "gripper_stall": "gripper_stall",
    "labware_missing": "labware_missing",
    "labware_moved": "labware_moved",
}
# Measured in graph runs of the fault scenarios (tests/graph/harness.py run_experiment, twin truth): the
# first drop lands 13-16 s sim time after the start, and a settle-each-drop cycle takes 1.7-2.3 s. A fault
# must start after dispensing has begun and end before the last drop is due, estimated from below.
DISPENSING_STARTED_S = 20.0
MIN_DROP_CYCLE_S = 1.5

# Scenarios where the system does not (yet) give the expected outcome: a finding each, not a test to weaken.
KNOWN_PLANNER_GAPS = {
    "calibration_naoh": ("a calibration bench for `agentchemist calibrate`, not a planner experiment: the planner "
                         "refuses 'Calibrate the pipette on the balance.' (no calibration protocol), but its "
                         "expected block says complete, so the scenario runner would count a failure"),
}
KNOWN_VOLUME_GAPS: dict[str, str] = {}


def _params(names: dict[str, str], select=lambda sc: True) -> list:
    out = []
    for path in FILES:
        sc = load_scenario(path)
        if not select(sc):
            continue
        marks = [pytest.mark.xfail(reason=names[path.stem], strict=True)] if path.stem in names else []
        out.append(pytest.param(path, id=path.stem, marks=marks))
    return out


@lru_cache(maxsize=None)
def scenario(path: Path) -> Scenario:
    return load_scenario(path)


@lru_cache(maxsize=None)
def front_image(path: Path) -> np.ndarray:
    return LabTwin(scenario(path)).render_camera("front", 0.5)


@lru_cache(maxsize=None)
def planned(path: Path) -> PlanOutcome:
    """The planner's answer with the scene the planner node builds from DescribeScene (vision supervisor),
    the containers' contents from the twin's inventory (tools/graph.py writes it for the node)."""
    desc = describe_scene(front_image(path), inventory=twin_inventory(scenario(path)))
    scene = SceneInfo.from_dict(desc.as_scene_dict())
    return plan_instruction(scenario(path).instruction, scene)


def _is_titration(sc: Scenario) -> bool:
    return bool(sc.titrant) and sc.weighing is None


def _is_fault_scenario(sc: Scenario) -> bool:
    return bool(sc.faults)


# ------------------------------------------------------------------------------------------------ files
def test_the_library_covers_issue_11():
    names = {p.stem for p in FILES}
    wanted = {"hcl_naoh", "acetic_naoh", "maleic_naoh", "phosphoric_naoh", "ca_edta", "nacl_weighing",
              "nacl_weighing_cluttered", "titration_cluttered", "missing_pipette", "unreachable_target",
              "ask_missing_concentration"} | {f"fault_{kind}" for kind in FAULT_KINDS}
    assert wanted <= names, sorted(wanted - names)
    for kind in FAULT_KINDS:  # one scenario per twin fault kind, injecting exactly that fault
        assert [f.kind for f in scenario(LIBRARY / f"fault_{kind}.yaml").faults] == [kind]
    assert {scenario(p).expected.outcome for p in FILES} == {"complete", "refuse", "ask", "abort"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_file_loads_is_named_after_itself_and_says_what_it_is(path: Path):
    sc = scenario(path)
    assert sc.name == path.stem
    assert sc.description.strip(), "description: one line on what the scenario tests"
    head = path.read_text(encoding="utf-8").splitlines()[0]
    assert head.startswith("# "), "start with comments saying what it is and the theory numbers"


def test_names_are_unique():
    names = [scenario(p).name for p in FILES]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_the_front_camera_sees_every_present_item(path: Path):
    """Clutter has its own tags and stands clear of the working items: nothing hides another's tag."""
    sc = scenario(path)
    seen = set(detect_markers(front_image(path)))
    wanted = {it.id: it.marker_id if it.marker_id is not None else default_marker_id(it.id)
              for it in sc.all_items() if it.present}
    hidden = sorted(item for item, marker in wanted.items() if marker not in seen)
    assert not hidden, f"tags not seen by the front camera: {hidden}"
    roles = {sc.beaker.id, sc.stirrer.id, sc.pipette.id, sc.probe.id, sc.balance.id}
    if sc.weighing is not None:
        roles.add(sc.weighing.bottle_id)
    clutter_ids = {it.id for it in sc.layout.clutter}
    assert not roles & clutter_ids, f"working items listed as clutter: {sorted(roles & clutter_ids)}"
    for it in sc.layout.clutter:
        assert it.on is None or it.on not in roles, f"clutter {it.id} stands on working item {it.on}"


# ------------------------------------------------------------------------------------------------ planner
@pytest.mark.parametrize("path", _params(KNOWN_PLANNER_GAPS))
def test_the_planner_gives_the_expected_outcome(path: Path):
    sc, outcome = scenario(path), planned(path)
    exp = sc.expected
    # what the scenario runner grades: RunExperiment's message is the outcome message plus its reasons
    message = outcome.message + ("" if not outcome.reasons else " (" + "; ".join(outcome.reasons) + ")")
    # abort: the plan is accepted; the run halts on what the bench shows while dispensing
    want = {"complete": "plan", "refuse": "refusal", "ask": "question", "abort": "plan"}[exp.outcome]
    assert outcome.kind == want, f"expected {exp.outcome}, the planner said: {message}"
    if exp.outcome in ("refuse", "ask"):
        assert exp.reason, "a refusal or question scenario says why in expected.reason"
        assert reason_matches(exp.reason, list(exp.missing), message), (
            f"the planner's answer does not name what the scenario expects "
            f"(reason {exp.reason!r}, missing {exp.missing}): {message}")
        return
    plan = outcome.plan
    pi = plan.parsed_instruction
    assert sc.beaker.id in pi.entities.objects, f"the plan does not use the working beaker: {pi.entities.objects}"
    clutter = {it.id for it in sc.layout.clutter} & set(pi.entities.objects)
    assert not clutter, f"the plan uses clutter: {sorted(clutter)}"
    if exp.outcome == "abort":
        return  # the bench differs from what the instruction (and the lab's inventory) says
    if sc.weighing is not None:
        assert pi.target_conditions.target_mass_g == pytest.approx(exp.target_mass_g)
        return
    assert pi.target_conditions.target_ph == exp.target_ph
    analyte, titrant = plan.reagent("analyte"), plan.reagent("titrant")
    # the instruction describes the bench the scenario builds
    if pi.family == "complexometric_titration":  # "EDTA solution": any chelator binds 1:1; the twin's is Na2H2Y
        ((name, conc),) = sc.titrant.items()
        lib = default_library()
        assert lib.get(titrant.name).kind == lib.get(name).kind == "chelator"
        assert titrant.concentration_m == pytest.approx(conc)
    elif titrant.unknown:  # a standardisation: the plan's estimate is the bottle's record, the twin holds the truth
        assert titrant.name in sc.titrant
        assert titrant.concentration_m == pytest.approx(sc.inventory["titrant_bottle"]["concentration"])
    else:
        assert {titrant.name: titrant.concentration_m} == sc.titrant
    assert sc.beaker.solution.get(analyte.name) == pytest.approx(analyte.concentration_m)
    volume = analyte.volume_ml or pi.initial_conditions.analyte_volume_ml
    assert volume == pytest.approx(sc.beaker.volume_ml)


@pytest.mark.parametrize("path", _params(KNOWN_VOLUME_GAPS, lambda sc: sc.expected.outcome == "complete"
                                         and _is_titration(sc) and sc.expected.target_ph is not None))
def test_complete_titrations_can_reach_their_target(path: Path):
    """Reachable by the planner's feasibility check (ideal solution) and as the twin's probe reads it
    (activity), within one pipette draw, the beaker and the draw the plan makes."""
    sc = scenario(path)
    target, va = sc.expected.target_ph, sc.beaker.volume_ml
    need = titrant_for_ph(sc.beaker.solution, va, sc.titrant, target).volume_ml  # raises when unreachable
    limit = min(sc.pipette.capacity_ml, sc.beaker.capacity_ml - va)
    assert need <= limit
    volumes = np.linspace(0.0, limit, int(limit / 0.005) + 1)
    read = titration_curve(sc.beaker.solution, va, sc.titrant, volumes, activity=True)
    assert (read >= target).any(), f"the probe never reads pH {target} within {limit:g} mL"
    read_need = float(volumes[np.argmax(read >= target)])
    outcome = planned(path)
    if outcome.kind == "plan":  # the planner's draw must cover it
        max_ml = outcome.plan.module_instantiation.dispenser.max_volume_ml
        assert read_need <= max_ml, (f"pH {target} as the probe reads it needs {read_need:.1f} mL; "
                                     f"the plan allows {max_ml} mL")


# ------------------------------------------------------------------------------------------------ faults
@pytest.mark.parametrize("path", [p for p in FILES if _is_fault_scenario(scenario(p))], ids=lambda p: p.stem)
def test_fault_scenarios_fire_while_dispensing_and_name_one_anomaly_per_fault(path: Path):
    sc = scenario(path)
    assert sc.expected.outcome == "complete" and sc.expected.target_ph is not None
    assert sc.expected.anomalies == [FAULT_ANOMALY[f.kind] for f in sc.faults]
    # a SHORT titration (5 seeds each in the benchmark): at most 10 mL of analyte and a few hundred drops
    assert _is_titration(sc) and sc.beaker.volume_ml <= 10.0
    need = titrant_for_ph(sc.beaker.solution, sc.beaker.volume_ml, sc.titrant, sc.expected.target_ph).volume_ml
    drops = need / sc.pipette.drop_volume_ml
    assert drops <= 250
    last_drop_due = DISPENSING_STARTED_S + drops * MIN_DROP_CYCLE_S
    for f in sc.faults:
        assert f.at_s >= DISPENSING_STARTED_S, f"{f.kind} at {f.at_s} s fires before dispensing has started"
        if f.kind in WINDOW_KINDS:
            assert f.duration_s > 0, f"{f.kind} must end (duration_s) so that the run can recover"
        assert f.at_s + f.duration_s <= last_drop_due, (
            f"{f.kind} ({f.at_s} s + {f.duration_s} s) may outlast dispensing (last drop due after "
            f"about {last_drop_due:.0f} s)")


def test_labware_faults_hit_an_item_the_run_needs():
    missing = scenario(LIBRARY / "fault_labware_missing.yaml")
    needed = {missing.beaker.id, missing.pipette.id, missing.probe.id, missing.stirrer.id, "ph_meter",
              "titrant_bottle"}
    assert missing.faults[0].params["id"] in needed
    moved = scenario(LIBRARY / "fault_labware_moved.yaml")
    fault = moved.faults[0]
    assert fault.params["id"] == moved.beaker.id
    items = {it.id: it for it in moved.all_items()}
    du, dv = fault.params["offset"]
    beaker_u = items[moved.beaker.id].position[0] + du
    tip_u = items[moved.pipette.id].position[0]
    # the twin drops land only within this distance of the beaker's centre: the move must make them miss
    assert abs(tip_u - beaker_u) > BEAKER_HALF_WIDTH_FRACTION * moved.cameras.width
