"""An executor does not run a latched plan that went out before it was there to see it (a restart mid-run)."""
from agentchemist.fsm.plan_gate import plan_age_problem
from agentchemist.fsm.supervision import SupervisionConfig


def test_a_plan_received_as_it_is_published_runs():
    assert plan_age_problem(120.0, 120.4, SupervisionConfig().max_plan_age_s) is None
    # the twin keeps agents within max_lead_s of each other: a receiving clock a little behind the planner's
    assert plan_age_problem(120.0, 118.5, 30.0) is None


def test_a_plan_older_than_the_limit_is_refused_with_the_reason():
    why = plan_age_problem(120.0, 931.0, 30.0)
    assert why is not None and "811.0 s before" in why and "restarted" in why and "send the goal again" in why


def test_a_plan_that_arrives_before_the_executors_clock_runs_is_refused():
    assert "just started" in plan_age_problem(120.0, 0.0, 30.0)


def test_an_unstamped_plan_is_not_aged():
    assert plan_age_problem(0.0, 931.0, 30.0) is None
    assert plan_age_problem(0.0, 0.0, 30.0) is None
