"""Gating the audio channel over a window (a microphone deafened by noise): its estimates inside count for
nothing, the statistical channel carries one record per drop volume there, and nothing is counted twice."""
import math

import pytest

from agentchemist.record.fusion import ChannelEstimate, Failure, fuse
from agentchemist.record.volume_fusion import VolumeFuser

DROP = 0.05


def test_a_failure_window_covers_exactly_its_span():
    window = Failure(10.0, "audio_noise", "halt", "audio", end=15.0)
    for stamp, gated in ((9.5, False), (10.0, True), (12.0, True), (15.0, True), (15.5, False)):
        r = fuse([ChannelEstimate("audio", 1.0, 0.9, stamp), ChannelEstimate("statistical", 1.1, 0.9, stamp)],
                 operation_active=True, failures=[window], now=stamp)
        assert (r.channel_confidences[r.channels.index("audio")] == 0.0) == gated, stamp
        assert (r.value == pytest.approx(1.1)) == gated
    open_ended = Failure(10.0, "audio_noise", "halt", "audio", end=math.inf)
    r = fuse([ChannelEstimate("audio", 1.0, 0.9, 1e6)], operation_active=True, failures=[open_ended], now=1e6)
    assert r.confidence == 0.0 and "all_below_tau" in r.quality_flags


def test_a_window_that_ends_before_it_starts_is_refused_as_malformed():
    r = fuse([ChannelEstimate("audio", 1.0, 0.9, 5.0)], operation_active=True,
             failures=[Failure(10.0, "x", "halt", "audio", end=2.0)], now=5.0)
    assert "invalid_failure:x" in r.quality_flags and r.confidence == pytest.approx(0.9)


def feed(fuser, start, stop, step=DROP, t0=0.0, dt=1.0):
    """Statistical estimates at each drop volume from `start` to `stop` (mL); returns the carried records."""
    out, v, t = [], start, t0
    while v <= stop + 1e-9:
        out += fuser.add_statistical(v, 0.9, t, step, "titrating")
        v, t = round(v + step, 9), t + dt
    return out


def test_without_a_gate_nothing_is_carried():
    fuser = VolumeFuser(drop_volume_ml=DROP)
    assert feed(fuser, DROP, 10 * DROP) == []
    r = fuser.fuse_drop(0.5, 0.9, 10.0, DROP, "titrating")
    assert set(r.channels) == {"audio", "statistical"} and not any("failure_gated" in f for f in r.quality_flags)


def test_inside_a_gate_the_statistical_channel_carries_one_record_per_drop():
    fuser = VolumeFuser(drop_volume_ml=DROP)
    fuser.fuse_drop(0.25, 0.9, 4.0, DROP, "titrating")     # five drops heard before the noise
    feed(fuser, DROP, 5 * DROP, t0=0.0)
    assert fuser.open_gate("audio", 5.5, "audio_noise") == []
    carried = feed(fuser, 6 * DROP, 9 * DROP, t0=6.0)     # four drops squeezed while deaf
    assert [round(t, 1) for t, _ in carried] == [6.0, 7.0, 8.0, 9.0]
    for _, r in carried:
        assert r.channels == ("statistical", "audio")
        assert r.channel_confidences[1] == 0.0 and "failure_gated:audio" in r.quality_flags
    assert carried[-1][1].value == pytest.approx(9 * DROP)
    fuser.close_gate("audio", 9.5)
    assert feed(fuser, 10 * DROP, 11 * DROP, t0=10.0) == []   # heard again: the audio channel paces records
    r = fuser.fuse_drop(0.3, 0.9, 10.2, DROP, "titrating")
    assert not any("failure_gated" in f for f in r.quality_flags)


def test_a_drop_heard_inside_the_gate_is_not_counted_twice():
    fuser = VolumeFuser(drop_volume_ml=DROP)
    fuser.open_gate("audio", 0.0, "audio_noise")
    r = fuser.fuse_drop(DROP, 0.9, 0.5, DROP, "titrating")   # one drop made it through the noise
    assert r.channel_confidences[r.channels.index("audio")] == 0.0
    carried = feed(fuser, DROP, 3 * DROP, t0=1.0)
    assert len(carried) == 2  # three drop volumes, one already recorded


def test_a_gate_opened_late_takes_in_what_arrived_since_its_start():
    """The anomaly comes a fraction of a second after the noise began; estimates stamped in between count."""
    fuser = VolumeFuser(drop_volume_ml=DROP)
    feed(fuser, DROP, 3 * DROP, t0=0.0)                       # 0, 1, 2 s
    feed(fuser, 4 * DROP, 5 * DROP, t0=3.0)                   # 3, 4 s: inside the window that starts at 2.5
    carried = fuser.open_gate("audio", 2.5, "audio_noise")
    assert [t for t, _ in carried] == [3.0, 4.0]


def test_a_new_goal_restarting_the_statistical_count_is_not_negative():
    fuser = VolumeFuser(drop_volume_ml=DROP)
    feed(fuser, DROP, 4 * DROP)
    fuser.open_gate("audio", 10.0, "audio_noise")
    carried = feed(fuser, DROP, 2 * DROP, t0=11.0)  # a resumed goal counts from zero again
    assert len(carried) == 2
