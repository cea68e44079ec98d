"""The boundary's rules (contracts/admission.py) and the plan gate's one-experiment-at-a-time refusal, free of
ROS: each rule refuses the attack it is for and takes what the graph really sends."""
from agentchemist.contracts import AnomalyKind
from agentchemist.contracts.admission import (BoundaryConfig, REFUSAL_KINDS, audio_problem, halt_problem,
                                              json_size_problem, sensor_problem, stamp_lead_problem)
from agentchemist.fsm.commands import Report
from agentchemist.fsm.effects import PublishState
from agentchemist.fsm.plan_gate import busy_refusal
from agentchemist.record.recording import NOT_ABOUT_VOLUME

CONFIG = BoundaryConfig()


def test_a_stamp_far_ahead_of_the_clock_is_refused_and_a_near_one_taken():
    assert "ahead" in stamp_lead_problem(100.0 + 1e6, 100.0, CONFIG.max_stamp_lead_s)
    assert stamp_lead_problem(104.9, 100.0, 5.0) is None           # within the lead
    assert stamp_lead_problem(50.0, 100.0, 5.0) is None            # the past is the judges' to order
    assert stamp_lead_problem(1e6, 0.0, 5.0) is None               # a clock that has not started judges nothing
    assert stamp_lead_problem(float("nan"), 100.0, 5.0) is None    # not a stamp: the judges refuse it


def test_only_the_graph_sensors_are_taken():
    assert sensor_problem("ph_meter", CONFIG.sensors) is None and sensor_problem("balance", CONFIG.sensors) is None
    assert "ghost_meter" in sensor_problem("ghost_meter", CONFIG.sensors)


def test_halts_only_from_the_graph_agents_and_of_known_kinds():
    for source in ("vision_supervisor", "dispenser_controller", "left_piper_driver", "right_piper_driver", "operator"):
        assert halt_problem(source, "node_error", CONFIG.halt_sources) is None, source
    assert halt_problem("left_piper_driver", "piper_some_new_event", CONFIG.halt_sources) is None
    assert "intruder" in halt_problem("intruder", "node_error", CONFIG.halt_sources)
    assert "self_destruct" in halt_problem("dispenser_controller", "self_destruct", CONFIG.halt_sources)


def test_an_audio_chunk_longer_than_a_second_or_faster_than_any_microphone_is_refused():
    assert audio_problem(480, 48000, 1, CONFIG) is None        # the robot's 10 ms
    assert audio_problem(4800, 48000, 1, CONFIG) is None       # the twin's 100 ms
    assert "52.08 s" in audio_problem(2_500_000, 48000, 1, CONFIG)
    assert "Hz" in audio_problem(100, 10_000_000, 1, CONFIG)
    assert audio_problem(100, 0, 1, CONFIG) is None            # bad_audio is the audio supervisor's


def test_json_size():
    assert json_size_problem("plan_json", "{}", 1000) is None
    assert "1001 characters" in json_size_problem("plan_json", "x" * 1001, 1000)


def test_a_plan_while_one_runs_is_a_warning_and_nothing_else():
    effects = busy_refusal("forged-2", "exp-1")
    reports = [e for e in effects if isinstance(e, Report)]
    assert [(r.kind, r.severity) for r in reports] == [("plan_refused", "warn")]
    assert "exp-1 is running" in reports[0].description
    assert not any(isinstance(e, PublishState) for e in effects)  # the running experiment's state is its own


def test_refusals_are_members_and_leave_the_recorded_volumes_alone():
    assert all(isinstance(k, AnomalyKind) for k in REFUSAL_KINDS)
    assert REFUSAL_KINDS <= NOT_ABOUT_VOLUME
