"""The lab_sim node's pacing logic in the core: lock-step with a streaming gripper controller
(sim/lockstep.py), stream schedule (sim/streams.py) and its settings (sim/lab_sim_config.py)."""
import pytest

from agentchemist.params import ParameterError, build_config
from agentchemist.sim.lab_sim_config import LabSimConfig
from agentchemist.sim.lockstep import STREAMING_TICKS, Lockstep
from agentchemist.sim.streams import StreamSchedule


def _stream(lock: Lockstep, ticks: int):
    for _ in range(ticks):
        assert not lock.hold(0.0)
        lock.ticked()
        lock.command()


def test_one_off_commands_never_hold_the_clock():
    lock = Lockstep(0.25)
    lock.ticked()
    lock.command()           # a grasp: one answered tick is no stream
    lock.ticked()
    assert not lock.hold(0.0)


def test_a_streaming_controller_is_waited_for_up_to_the_timeout():
    lock = Lockstep(0.25)
    _stream(lock, STREAMING_TICKS)
    lock.ticked()            # its answer to this tick has not come yet
    assert lock.hold(10.0) and lock.hold(10.2)
    lock.command()
    assert not lock.hold(10.3)
    lock.ticked()
    assert lock.hold(20.0) and lock.hold(20.1) and lock.hold(20.2)
    assert not lock.hold(20.3)   # stuck past the timeout, looked at again and again: the world goes on
    assert lock.streak == 0 and not lock.hold(20.4)


def test_a_pause_of_the_whole_process_is_not_a_stuck_controller():
    """One process not scheduled for 5 s: the twin's first looks after the pause are past the timeout, but
    the controller has not had its turn yet; its answer then comes and the tick was never skipped."""
    lock = Lockstep(0.25)
    _stream(lock, STREAMING_TICKS)
    lock.ticked()
    assert lock.hold(30.0)       # the twin looks, then the process is paused
    assert lock.hold(35.0)       # the first look after the pause: past the timeout, still waiting
    lock.command()
    assert not lock.hold(35.001) and lock.streak == STREAMING_TICKS + 1


def test_no_lockstep_when_the_timeout_is_zero():
    lock = Lockstep(0.0)
    _stream(lock, 5)
    lock.ticked()
    assert not lock.hold(0.0)


def test_a_tick_without_an_answer_ends_the_stream():
    lock = Lockstep(0.25)
    _stream(lock, STREAMING_TICKS)
    lock.ticked()
    lock.ticked()            # went by unanswered (publish_clock false never holds)
    assert lock.streak == 0


def test_a_node_waiting_on_a_peer_holds_the_clock_until_answered_or_the_limit():
    lock = Lockstep(0.25, wait_limit_s=60.0)
    lock.peer_wait("/vision_supervisor", 1, 100.0)
    assert lock.hold(100.0) and lock.hold(159.0)
    assert lock.waiting_on_peers(159.0) == ["/vision_supervisor"]
    lock.peer_wait("/vision_supervisor", 2, 150.0)   # a second request: the wait began at the first
    assert not lock.hold(160.5)                      # past the limit: a dead peer does not freeze the world
    lock.peer_wait("/vision_supervisor", 0, 161.0)
    lock.peer_wait("/action_policy", 1, 170.0)
    assert lock.hold(170.1)
    lock.peer_wait("/action_policy", 0, 170.2)       # answered: the clock goes on
    assert not lock.hold(170.3) and lock.waiting_on_peers(170.3) == []


def test_peer_waits_never_hold_with_a_zero_limit():
    lock = Lockstep(0.25, wait_limit_s=0.0)
    lock.peer_wait("/vision_supervisor", 1, 0.0)
    assert not lock.hold(0.0)


def test_the_clock_stays_within_max_lead_of_the_slowest_live_acknowledging_node():
    lock = Lockstep(0.25, max_lead_s=2.0, ack_dead_s=10.0)
    assert not lock.hold(0.0, t=100.0)               # nobody acknowledges: nobody is waited for
    lock.acked("/dispenser_controller", 99.5, 0.0)
    lock.acked("/recorder", 97.9, 0.0)
    assert lock.behind(100.0, 1.0) == ["/recorder"] and lock.hold(1.0, t=100.0)
    lock.acked("/recorder", 99.0, 2.0)               # it caught up
    assert not lock.hold(2.0, t=100.0) and lock.hold(2.0, t=101.6)  # now the dispenser is 2.1 s behind
    assert not lock.hold(12.1, t=150.0)              # both silent for over 10 s wall: not waited for


def test_acknowledgements_never_hold_when_ack_dead_is_zero():
    lock = Lockstep(0.25, max_lead_s=2.0, ack_dead_s=0.0)
    lock.acked("/recorder", 0.0, 0.0)
    assert not lock.hold(0.0, t=100.0)


def test_streams_fire_at_their_periods_and_audio_in_whole_chunks():
    s = StreamSchedule(1.0, {"ph": 0.25, "truth": 1.0}, audio_chunk_s=0.1)
    fired = [t for t in (1.0 + 0.125 * k for k in range(17)) if s.due("ph", t)]
    assert fired == [1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0]
    assert s.due("truth", 1.0) and not s.due("truth", 1.5) and s.due("truth", 2.0)
    assert list(s.audio_chunks(1.25)) == [1.0, 1.1]
    assert list(s.audio_chunks(1.25)) == []
    assert list(s.audio_chunks(1.5)) == [1.2, 1.3, 1.4]


def test_config_pace_periods_and_checks():
    cfg = LabSimConfig()
    assert cfg.pace(20.0) == 20.0 and cfg.pace(500.0) == 50.0
    assert LabSimConfig(real_time_factor=5.0).pace(20.0) == 5.0
    assert cfg.camera_period(2.0) == 2.0 and LabSimConfig(camera_rate_hz=0.0).camera_period(2.0) == 0.5
    assert cfg.marker_period == 0.5 and LabSimConfig(marker_rate_hz=0.0).marker_period == 0.0
    with pytest.raises(ParameterError, match="'cameras': 'roof'"):
        build_config(LabSimConfig, {"cameras": ["front", "roof"]})
    with pytest.raises(ParameterError, match="'clock_period'"):
        build_config(LabSimConfig, {"clock_period": 1.0})
