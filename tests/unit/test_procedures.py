"""The executor's family procedures (agentchemist.experiments.procedure): each family's is found from the plan,
a family without one gets the generic procedure, and the hosts (fsm/executor.py, fsm/supervision.py) never
ask which family runs."""
import ast
import re

import pytest

from agentchemist.experiments import Family, family_names
from agentchemist.experiments.acid_base.procedure import PhEndpoint
from agentchemist.experiments.complexometric.procedure import ColourEndpoint
from agentchemist.experiments.procedure import Procedure
from agentchemist.experiments.weighing.procedure import MassAndDissolution
from agentchemist.fsm.effects import SendGoal
from agentchemist.fsm.executor import Executor
from agentchemist.fsm.record_watch import RecordWatchConfig
from agentchemist.fsm.supervision import Supervision, SupervisionConfig
from tests.conftest import REPO

FSM = REPO / "src" / "agentchemist" / "fsm"
HOSTS = (FSM / "executor.py", FSM / "supervision.py")


@pytest.mark.parametrize("plan,kind", [("ph_plan", PhEndpoint), ("ca_plan", ColourEndpoint),
                                       ("weighing_plan", MassAndDissolution)])
def test_each_family_runs_its_own_procedure(request, plan, kind):
    plan = request.getfixturevalue(plan)
    ex = Executor(plan, 0.0)
    assert type(ex.procedure) is kind and ex.procedure is ex.sup.procedure and ex.procedure.sup is ex.sup


def test_a_family_without_a_procedure_runs_the_generic_one(ph_plan, monkeypatch):
    """The generic procedure judges no endpoint of its own, but the plan still runs: its drop goal goes out."""
    monkeypatch.setattr(Family, "part", lambda self, aspect: None)
    ex = Executor(ph_plan, 0.0, SupervisionConfig(recorder=RecordWatchConfig()))
    assert type(ex.procedure) is Procedure and ex.sup.mass is None and not ex.procedure.colour_endpoint
    ex.on_recorder_status(ph_plan.experiment_id, True, 0.0, 0.0, None)
    effects, t = ex.start(0.0, None, require_scene=False), 0.0
    while not [e for e in effects if isinstance(e, SendGoal) and e.goal is not None]:
        policy = [e for e in effects if isinstance(e, SendGoal)]
        assert policy, effects
        t += 1.0
        effects = ex.on_policy_result(policy[0].task, True, policy[0].payload["symbol"], "", t)
    assert ex.machine.state == "titrating"
    assert all(ex.on_ph(t + 0.2 * i, 10.02, 0.005) == [] for i in range(60))  # no pH endpoint here


def _names_tested(path) -> list[str]:
    """What in the module tells families apart: a family or primitive name in its code (docstrings aside),
    a primitive compared, the mass watch's presence tested, the plan's family read."""
    tree = ast.parse(path.read_text())
    docstrings = {ast.get_docstring(n, clean=False) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    found = sorted(s for s in strings - docstrings if s in family_names() or s in ("pour_solid", "tare", "grasp"))
    return found + re.findall(r"\.primitive\s*[=!]=|\.mass\s+is\b|parsed_instruction", path.read_text())


@pytest.mark.parametrize("path", HOSTS, ids=lambda p: p.name)
def test_the_hosts_never_ask_which_family_runs(path):
    assert _names_tested(path) == []


def test_the_family_check_catches_a_host_that_asks(tmp_path):
    host = tmp_path / "host.py"
    host.write_text('"""weighing is a family."""\n'
                    f'def f(task, sup, plan):\n    return task.primitive == "pour_solid" or sup.mass is None '
                    f'or plan.family == "{family_names()[0]}"\n')
    assert len(_names_tested(host)) == 4


def test_the_executor_stays_small():
    assert len((FSM / "executor.py").read_text().splitlines()) <= 300
    executor = next(n for n in ast.parse((FSM / "executor.py").read_text()).body
                    if isinstance(n, ast.ClassDef) and n.name == "Executor")
    assert sum(isinstance(b, ast.FunctionDef) for b in executor.body) <= 25


def test_the_supervision_reads_the_procedures_state_through(ca_plan, weighing_plan, ph_plan):
    """Tools and tests read one object: sup.colour_change is the colour procedure's, sup.mass the weighing's."""
    ca, weighing, ph = Supervision(ca_plan, 0.0), Supervision(weighing_plan, 0.0), Supervision(ph_plan, 0.0)
    assert ca.colour_change is ca.procedure.colour_change and weighing.mass is weighing.procedure.mass
    assert ph.mass is None and ph.ph_direction == 0
    with pytest.raises(AttributeError):
        ph.colour_change  # noqa: B018 (a pH plan has no colour detector)
