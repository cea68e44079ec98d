"""The twin's ground truth over a long run: experiments back to back on one bench keep every drop for
grading, so what one drop costs to keep decides how far the run grows (issue 11). Measured with
tracemalloc across whole experiments (new_sample to new_sample), as the long run runs them."""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest

from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.truth_log import DropLog
from agentchemist.sim.pipette import Drop
from tests.conftest import REPO

SR = 48000
# A Drop object with its composition dict, and the synth's per-event record with its parameter arrays,
# cost about 2.2 kB a drop together; the compact logs about 0.2 kB (a drop's audio label included).
MAX_BYTES_PER_DROP = 600


def titrate(tw: LabTwin, t: float, mm: float) -> float:
    """Grasp the pipette, draw, and creep the gripper `mm` past the bulb contact (about 21 drops a mm);
    returns the sim time after the last drop has landed."""
    tw.command_gripper("right", 0.0605, t)
    tw.draw("naoh", 30.0, t + 1.0)
    x, t = 60.0, t + 1.0
    while x > 60.0 - mm:
        x -= 0.01
        t = round(t + 0.05, 10)
        tw.command_gripper("right", x / 1000.0, t)
    t += 2.0
    tw.step(t)
    return t


def retained(snapshot_after, snapshot_before) -> int:
    return sum(s.size_diff for s in snapshot_after.compare_to(snapshot_before, "filename"))


def test_an_experiment_leaves_only_a_compact_row_per_drop_in_the_twin():
    tw = LabTwin(load_scenario(REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml"))
    # Traced from the start, so that caches filled before are not mistaken for growth when replaced.
    tracemalloc.start(1)
    try:
        t = titrate(tw, 0.0, 4.0)  # the first experiment warms every cache up
        assert tw.new_sample(t).accepted
        gc.collect()
        before, drops_before = tracemalloc.take_snapshot(), tw.truth_summary()["drops_landed"]
        t = titrate(tw, t + 1.0, 4.0)
        assert tw.new_sample(t).accepted  # the beaker and its pH cache go: what stays is the record
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    drops = tw.truth_summary()["drops_landed"] - drops_before
    assert drops > 60
    per_drop = retained(after, before) / drops
    print(f"{per_drop:.0f} bytes kept per drop")
    assert per_drop < MAX_BYTES_PER_DROP, f"{per_drop:.0f} bytes kept per drop"
    # ... and the record is all there: every drop, every droplet sound
    truth = tw.truth()
    assert len(truth["drops"]) == truth["drops_landed"] == drops_before + drops
    heard = [e for e in tw.audio_truth("right") if e.kind == "droplet"]
    assert [e.time for e in heard] == pytest.approx([d["time"] for d in truth["drops"]])


def test_drop_log_gives_back_what_drop_as_dict_gave():
    log = DropLog()
    drops = [Drop(1, 0.5, 0.6, 0.047, "naoh", {"naoh": 0.1}),
             Drop(2, 1.5, 1.6, 0.046, "naoh", {"naoh": 0.1}, cause="extra_drop", fate="spilled"),
             Drop(3, 2.5, 2.6, 0.048, "naoh", {"naoh": 0.1})]
    rows = [log.add(d) for d in drops]
    assert log.landed == 0 and log.fate(rows[0]) == "falling"
    drops[0].fate = "beaker"
    log.set_fate(rows[0], "beaker")
    drops[2].fate = "overflow"
    log.set_fate(rows[2], "overflow")
    log.set_fate(rows[2], "overflow")  # a second report of the same fate counts once
    assert log.as_dicts() == [d.as_dict() for d in drops]
    assert log.landed == 2 and log.landed_ml == pytest.approx(0.047 + 0.048)
    assert log.nbytes() < 50 * len(drops)


def test_synth_keeps_a_compact_row_per_event_and_renders_old_events_again_the_same():
    events = [AudioEventTruth(0.5 + 0.7 * i, "droplet", 0.0, f"drop {i + 1}") for i in range(400)]
    whine = AudioEventTruth(3.0, "motor_whine", 0.0, "right gripper")  # its length is drawn: must not change
    synth = ContactAudioSynth(ContactAudioConfig(seed=5))

    def play(batch, until_s):
        """Schedule, then render chunk by chunk as the node does (the synth forgets behind the horizon)."""
        for e in batch:
            synth.schedule(e)
        while synth_pos[0] < int(until_s * SR):
            synth.render(synth_pos[0] / SR, SR // 10)
            synth_pos[0] += SR // 10

    synth_pos = [0]
    early = events[:14] + [whine]  # everything in the first 10 s
    for e in early:
        synth.schedule(e)
    first = synth.render(0.0, 10 * SR)
    synth_pos[0] = 10 * SR
    # Traced from here on, so that cached blocks allocated before are not mistaken for growth when replaced.
    tracemalloc.start(1)
    try:
        play(events[14:200], events[199].time + 0.35)  # every cache at its working size
        gc.collect()
        before = tracemalloc.take_snapshot()
        play(events[200:], events[-1].time + 1.0)
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    per_event = retained(after, before) / 200
    print(f"{per_event:.0f} bytes kept per event")
    assert per_event < 250, f"{per_event:.0f} bytes kept per event"
    # Waveforms of past events are drawn again from (seed, index): the same samples as the first time.
    assert np.array_equal(synth.render(0.0, 10 * SR), first)
    fresh = ContactAudioSynth(ContactAudioConfig(seed=5))
    for e in early + events[14:]:
        fresh.schedule(e)
    assert np.array_equal(fresh.render(0.0, 10 * SR), first)
    assert synth.truth() == fresh.truth() and len(synth.truth()) == 401
    assert next(e for e in synth.truth() if e.kind == "motor_whine").duration > 0.0
