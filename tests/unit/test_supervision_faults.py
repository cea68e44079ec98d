"""The vision supervisor's side of the twin's faults, free of ROS: a frozen pH meter takes no decision,
the bench watch pauses / reports / resumes / aborts, and the audio supervisor's noise pauses dispensing.
On clean readings none of it fires."""
import numpy as np
import pytest

from agentchemist.fsm.commands import Abort, Apply, Report, StopDispensing, name
from agentchemist.fsm.supervision import Supervision, SupervisionConfig
from agentchemist.perception.scene import LabwareWatchConfig

SD = 0.005
BENCH = {1: (164.5, 162.5), 3: (129.5, 201.5), 4: (136.5, 112.5), 6: (251.5, 188.5)}


def to_waiting(sup, t=0.0):
    for sym in ("grasp_ok", "draw_ok", "act", "titrate"):
        t += 1.0
        assert sup.apply(sym, t) is not None, sup.rejected
    sup.start_dispensing(t, 2.0)
    t += 1.0
    assert sup.apply("drop", t) is not None and sup.machine.state == "waiting_ph"
    return t


def readings(sup, t, seconds, value=None, rng=None, ph=2.0):
    """Feed 5 Hz readings (noisy around `ph`, or the fixed `value`); return (commands, end time)."""
    out = []
    for _ in range(int(round(seconds * 5))):
        t = round(t + 0.2, 6)
        v = value if value is not None else round(ph + SD * float(rng.standard_normal()), 3)
        out += sup.on_ph(t, v, SD)
    return out, t


def symbols(cmds):
    return [c.symbol for c in cmds if isinstance(c, Apply)]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_clean_readings_settle(ph_plan, seed):
    sup = Supervision(ph_plan, 0.0)
    t = to_waiting(sup)
    cmds, _ = readings(sup, t, 3.0, rng=np.random.default_rng(seed))
    assert "ph_stable" in symbols(cmds) and not [c for c in cmds if isinstance(c, Report)]


def test_a_frozen_meter_is_never_called_settled(ph_plan):
    sup = Supervision(ph_plan, 0.0)
    t = to_waiting(sup)
    cmds, t = readings(sup, t, 10.0, value=2.003)
    assert symbols(cmds) == [] and sup.machine.state == "waiting_ph"
    assert sup.frozen.frozen
    assert not [c for c in cmds if isinstance(c, Report)]  # while dispensing, the dispenser reports it
    cmds, t = readings(sup, t, 3.0, rng=np.random.default_rng(0))  # it moves again
    assert "ph_stable" in symbols(cmds)


def test_a_frozen_meter_at_the_target_is_no_endpoint(ph_plan):
    sup = Supervision(ph_plan, 0.0)
    t = to_waiting(sup)
    sup.apply("ph_stable", t + 0.1)
    cmds, _ = readings(sup, t + 0.1, 20.0, value=10.01)
    assert "endpoint" not in symbols(cmds) and not [c for c in cmds if isinstance(c, StopDispensing)]


def test_frozen_outside_dispensing_is_reported_once_and_resolved(ph_plan):
    sup = Supervision(ph_plan, 0.0)
    sup.apply("grasp_ok", 1.0)  # the dispenser is not running: nobody else would notice
    cmds, t = readings(sup, 1.0, 10.0, value=1.06)
    stuck = [c for c in cmds if isinstance(c, Report)]
    assert len(stuck) == 1 and stuck[0].kind == "ph_stuck" and stuck[0].severity == "warn"
    cmds, _ = readings(sup, t, 1.0, rng=np.random.default_rng(1), ph=1.06)
    assert [(c.kind, c.severity) for c in cmds if isinstance(c, Report)] == [("ph_stuck", "info")]


def watched(ph_plan, **config):
    sup = Supervision(ph_plan, 0.0, SupervisionConfig(labware=LabwareWatchConfig(**config)))
    sup.start_watch(BENCH, 320)
    return sup


def test_a_clean_bench_says_nothing(ph_plan):
    sup = watched(ph_plan)
    for i in range(100):
        assert sup.on_scene(float(i), {m: (u + 0.5 * (-1) ** i, v) for m, (u, v) in BENCH.items()}) == []


def test_a_missing_item_pauses_at_once_reports_then_resumes(ph_plan):
    sup = watched(ph_plan)
    gone = {m: p for m, p in BENCH.items() if m != 6}
    first = sup.on_scene(10.0, gone)
    assert [name(c) for c in first] == ["pause_dispensing"] and first[0].reason == "labware"
    second = sup.on_scene(12.0, gone)
    assert [name(c) for c in second] == ["report"]
    a = second[0]
    assert a.kind == "labware_missing" and a.severity == "warn" and "titrant_bottle is missing" in a.description
    back = sup.on_scene(14.0, BENCH)
    assert [name(c) for c in back] == ["report", "unpause_dispensing"]
    assert back[0].severity == "info" and sup.pauses == set()


def test_a_moved_beaker_is_labware_moved(ph_plan):
    sup = watched(ph_plan)
    moved = {**BENCH, 1: (204.5, 162.5), 4: (176.5, 112.5)}  # the probe in it moves along
    cmds = sup.on_scene(10.0, moved) + sup.on_scene(12.0, moved)
    a = next(c for c in cmds if isinstance(c, Report))
    assert a.kind == "labware_moved" and a.description.startswith("beaker_main moved by (+40, +0) px")


def test_an_item_that_never_returns_aborts_with_what_is_missing(ph_plan):
    sup = watched(ph_plan, return_timeout_s=20.0)
    gone = {m: p for m, p in BENCH.items() if m != 4}
    cmds = []
    for t in range(10, 40, 2):
        cmds += sup.on_scene(float(t), gone)
    aborts = [c for c in cmds if isinstance(c, Abort)]
    assert len(aborts) == 1 and aborts[0].kind == "labware_missing"
    assert "ph_probe is missing" in aborts[0].reason
    sup.abort(aborts[0].reason, 40.0)
    assert sup.on_scene(42.0, gone) == []  # terminal: the watch is over


def test_audio_noise_pause_is_idempotent_and_independent(ph_plan):
    sup = watched(ph_plan)
    assert [name(c) for c in sup.pause("audio_noise")] == ["pause_dispensing"]
    assert sup.pause("audio_noise") == []
    assert [name(c) for c in sup.on_scene(1.0, {})][:1] == ["pause_dispensing"]  # a second reason
    assert [name(c) for c in sup.unpause("audio_noise")] == ["unpause_dispensing"]
    assert sup.pauses == {"labware"}
