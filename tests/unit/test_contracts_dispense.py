"""The dispense request: validated when made, the wire's 0-means-default read and written in one place."""
import math

import pytest

from agentchemist.contracts.dispense import (DropsRequest, GoalFields, PourRequest, RequestError, from_goal_fields,
                                             goal_fields)
from agentchemist.contracts.anomalies import AnomalyKind
from agentchemist.fsm.dispensing import DispenseBook, NoGoal, pour_request


@pytest.mark.parametrize("fields, words", [
    ({"target_volume_ml": math.nan}, "target_volume_ml is nan: not a number"),
    ({"target_volume_ml": 1.0, "rate_mm_s": -0.1}, "rate_mm_s is -0.1: must not be negative"),
    ({"target_ph": 15.0}, "target_ph 15.0 is outside 0..14"),
    ({"target_ph": math.inf}, "target_ph inf is outside 0..14"),
    ({}, "neither a target volume nor a target pH"),
    ({"target_volume_ml": 0.0}, "neither a target volume nor a target pH"),
    ({"target_ph": 7.0, "ph_direction": 2}, "ph_direction must be +1 or -1"),
])
def test_a_bad_drops_request_is_refused_with_its_reason_and_ids(fields, words):
    with pytest.raises(RequestError, match=words.replace("+", r"\+")) as refusal:
        DropsRequest(experiment_id="e1", subtask_id="s1", **fields)
    assert (refusal.value.experiment_id, refusal.value.subtask_id) == ("e1", "s1")


def test_a_bad_pour_request_is_refused():
    with pytest.raises(RequestError, match="side 'up' is not left or right"):
        PourRequest(target_mass_g=2.0, side="up")
    with pytest.raises(RequestError, match="target_mass_g is -1.0: must not be negative"):
        PourRequest(target_mass_g=-1.0)
    with pytest.raises(RequestError, match="timeout_s is nan"):
        PourRequest(target_mass_g=1.0, timeout_s=math.nan)


def test_the_wire_reads_zero_as_the_default_and_round_trips():
    drops = DropsRequest("e1", "s1", target_volume_ml=2.0, target_ph=7.0, ph_direction=-1, rate_mm_s=0.2,
                         change_rate_threshold_ph_s=0.05, settle_each_drop=True, resume_on_command=True)
    wire = goal_fields(drops)
    assert wire["use_target_ph"] and wire["wait_on_change_threshold"] == 0.05
    assert "mode" not in wire  # "" on the wire, as the recorded goals have it
    assert wire["stable_window_s"] == 0.0 and wire["timeout_s"] == 0.0   # unset: the dispenser's default
    assert from_goal_fields(GoalFields(**wire)) == drops
    ph_only = from_goal_fields(GoalFields(target_ph=7.0, use_target_ph=True))
    assert ph_only.target_volume_ml is None and ph_only.rate_mm_s is None and ph_only.ph_direction == 0
    assert from_goal_fields(GoalFields(target_volume_ml=1.0, target_ph=3.0)).target_ph is None  # use_target_ph off
    pour = PourRequest("e1", "w1", target_mass_g=2.0, mass_tolerance_g=0.05, side="left")
    assert from_goal_fields(GoalFields(**goal_fields(pour))) == pour
    assert goal_fields(PourRequest(target_mass_g=1.0))["side"] == ""
    with pytest.raises(RequestError, match="unknown dispensing mode 'spray'") as refusal:
        from_goal_fields(GoalFields(experiment_id="e1", subtask_id="s1", mode="spray"))
    assert refusal.value.experiment_id == "e1"


class _Task:
    def __init__(self, **parameters):
        self.parameters = parameters


def test_the_executor_builds_the_request_from_the_plans_parameters():
    book = DispenseBook()
    goal = book.drop_goal(_Task(target_ph=8.2, rate_mm_s=0.2, settle_each_drop=True), colour_endpoint=False,
                          ph_direction=1, resume=False)
    assert goal == DropsRequest(target_ph=8.2, ph_direction=1, rate_mm_s=0.2, settle_each_drop=True,
                                resume_on_command=True)
    capped = book.drop_goal(_Task(max_volume_ml=12.0), colour_endpoint=True, ph_direction=1, resume=False)
    assert capped.target_volume_ml == 12.0 and capped.target_ph is None and capped.ph_direction == 0
    bad = book.drop_goal(_Task(target_ph=8.2, rate_mm_s=-1.0), colour_endpoint=False, ph_direction=1, resume=False)
    assert bad == NoGoal(AnomalyKind.INVALID_PLAN, "dispense request refused: rate_mm_s is -1.0: must not be negative")
    book.dispensed_before_ml = 12.0
    spent = book.drop_goal(_Task(max_volume_ml=12.0), colour_endpoint=True, ph_direction=1, resume=True)
    assert spent.kind == AnomalyKind.ENDPOINT_NOT_REACHED and "12.000 mL" in spent.reason
    assert pour_request({"target_mass_g": 2.5, "side": "", "mass_tolerance_g": 0}) == PourRequest(target_mass_g=2.5)
