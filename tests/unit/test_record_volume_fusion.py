"""Per-drop volume fusion (agentchemist.record.volume_fusion): the drop counter's calibration error must not
accumulate into the record, and the statistical estimate is brought to the drop it is fused with.

The recorded case is the twin's HCl/NaOH worked example (config/scenarios/hcl_naoh.yaml, seed 1, drops 1-560,
through the equivalence at 25.000 mL), run through the full node graph:
tests/data/recorded/hcl_naoh_seed1_volume_estimates.csv holds every titrant-volume estimate the recorder
received, in arrival order (audio: the supervisor's running total, count x the calibrated 0.04865 mL;
statistical: the dispenser's Q_stat at each drop-volume crossing); hcl_naoh_seed1_drops.csv the twin's true
cumulative volume after each drop and the settled pH the run recorded for that drop. The twin's drops
held 0.0489 mL while it squeezed at 0.1 mm/s, so the audio total fell 0.10 mL (2 drops) short by the
equivalence, and the records fused from it (its total and the statistical estimate, equal weights) put
the equivalence 1.4 drops early.
"""
import csv
import math
from pathlib import Path

import numpy as np
import pytest

from agentchemist.chemistry.analysis import analyze_titration
from agentchemist.record.errors import RecordConfigError
from agentchemist.record.volume_fusion import VolumeFuser

DATA = Path(__file__).resolve().parents[1] / "data" / "recorded"
CALIBRATED_DROP = 0.0486519230769231   # config/calibration/pipette.yaml (0.1 mm/s)


def _recorded():
    with open(DATA / "hcl_naoh_seed1_volume_estimates.csv", newline="") as f:
        estimates = [(float(r["stamp_s"]), r["channel"], float(r["value_ml"]), float(r["confidence"]),
                      float(r["delta_ml"]), r["fsm_state"]) for r in csv.DictReader(f)]
    with open(DATA / "hcl_naoh_seed1_drops.csv", newline="") as f:
        drops = [(int(r["drop"]), float(r["true_total_ml"]), float(r["settled_ph"])) for r in csv.DictReader(f)]
    return estimates, drops


def _replay(estimates, fuser=None):
    """Feed the estimates as the recorder node does; returns the fused volume of each heard drop."""
    fuser = fuser or VolumeFuser()
    out = []
    for stamp, channel, value, confidence, delta, state in estimates:
        if channel == "statistical":
            assert fuser.add_statistical(value, confidence, stamp, delta, state) == []  # no gate in this run
        else:
            out.append(fuser.fuse_drop(value, confidence, stamp, delta, state).value)
    return np.array(out)


def test_recorded_run_fused_volumes_follow_the_true_volume_drop_by_drop():
    estimates, drops = _recorded()
    fused = _replay(estimates)
    truth = np.array([v for _, v, _ in drops])
    assert len(fused) == len(truth) == 560
    error = fused - truth
    # The audio total alone is 0.10 mL short here; the records stay within a fraction of a drop of the truth.
    audio_total = np.array([v for _, ch, v, *_ in estimates if ch == "audio"])
    assert audio_total[510] - truth[510] < -0.09
    assert np.max(np.abs(error)) < 0.5 * CALIBRATED_DROP
    assert abs(np.mean(error[400:])) < 0.1 * CALIBRATED_DROP
    at_jump = int(np.searchsorted(truth, 25.0))  # the drop that crossed the equivalence
    assert abs(error[at_jump - 1]) < 0.25 * CALIBRATED_DROP and abs(error[at_jump]) < 0.25 * CALIBRATED_DROP


def test_recorded_run_equivalence_within_one_drop_of_theory():
    estimates, drops = _recorded()
    fused = _replay(estimates)
    ph = [p for _, _, p in drops]
    analysis = analyze_titration(fused, ph, titrant_m=0.1, analyte_volume_ml=25.0, analyte="hcl", titrant="naoh",
                                 activity=True, fit=True)
    (eq,) = analysis.equivalence_points
    assert eq.supported
    assert abs(eq.volume_ml - 25.0) < 0.046875, eq.volume_ml
    assert abs(analysis.fit.equivalence_volumes_ml[0] - 25.0) < 0.5 * 0.046875


# ---------------------------------------------------------------------------------------- a simulated bench
def _bench(n_drops=520, drop_ml=0.048875, sd_ml=0.0015, calibrated_ml=CALIBRATED_DROP, flow_ml_s=0.1, seed=3):
    """A drop-by-drop squeeze as in a settle-each-drop titration: the bulb is squeezed at `flow_ml_s` until
    the pendant drop detaches; the drop falls 0.1 s and is heard 0.05 s after it lands, when the squeeze
    stops (0.015 mL squeezed after the drop left: the twin's runs show 0.01-0.025 mL) for a 1 s hold.
    The dispenser's Q_stat (expelled volume, one calibrated drop when the first drop is heard) is reported
    at each 0.05 s control tick where it crossed another calibrated drop volume. Returns the estimates in
    arrival order and the true cumulative volumes."""
    rng = np.random.default_rng(seed)
    volumes = drop_ml + sd_ml * rng.standard_normal(n_drops)
    times, expelled = [0.0], [0.0]   # the expelled volume, piecewise linear in time (flat while held)
    pendant, detach = 0.0, []
    for v in volumes:
        t = times[-1] + (v - pendant) / flow_ml_s
        times.append(t)
        expelled.append(expelled[-1] + v - pendant)
        detach.append(t)
        pendant = 0.15 * flow_ml_s                      # squeezed on until the hold, 0.15 s after
        times += [t + 0.15, t + 1.15]
        expelled += [expelled[-1] + pendant] * 2
    heard = np.array(detach) + 0.1
    origin = np.interp(heard[0] + 0.05, times, expelled) - calibrated_ml  # Q_stat := one drop at the first
    events, total = [], 0.0
    for onset in heard:
        total += calibrated_ml
        events.append((onset + 0.05, ("audio", total, float(onset), calibrated_ml)))
    ticks = np.arange(int(heard[0] / 0.05) + 5, int(heard[-1] / 0.05) + 1) * 0.05
    q_stat = np.interp(ticks, times, expelled) - origin
    next_report, reported = calibrated_ml, 0.0
    for tick, q in zip(ticks, q_stat):
        if q >= next_report - 1e-12:
            next_report = (math.floor(q / calibrated_ml + 1e-9) + 1) * calibrated_ml
            events.append((float(tick), ("statistical", float(q), float(tick), float(q - reported))))
            reported = q
    events.sort(key=lambda e: e[0])
    return [e for _, e in events], np.cumsum(volumes)


def _fuse_bench(events, fuser):
    out = []
    for channel, value, stamp, delta in events:
        if channel == "audio":
            out.append(fuser.fuse_drop(value, 0.9, stamp, delta, "titrating").value)
        else:
            fuser.add_statistical(value, 0.9, stamp, delta, "waiting_ph")
    return np.array(out)


@pytest.mark.parametrize("drop_ml", [0.048875, 0.0478])  # squeezed at the calibration's rate, and slower
def test_the_drop_counters_calibration_error_does_not_accumulate(drop_ml):
    events, truth = _bench(drop_ml=drop_ml)
    fused = _fuse_bench(events, VolumeFuser(drop_volume_ml=CALIBRATED_DROP))
    audio = np.array([v for ch, v, *_ in events if ch == "audio"])
    assert abs(audio[-1] - truth[-1]) > 0.1  # the counter's own total drifts by more than two drops
    error = fused - truth
    # Off by where the dispenser's reports fall relative to the drops (up to about half a drop), not by
    # anything that grows with the count.
    assert np.max(np.abs(error)) < 0.75 * CALIBRATED_DROP
    assert abs(np.mean(error[-100:])) < 0.3 * CALIBRATED_DROP
    assert abs(np.mean(error[-100:]) - np.mean(error[50:150])) < 0.1 * CALIBRATED_DROP


def test_a_statistical_estimate_taken_before_the_drop_fell_is_brought_to_it():
    fuser = VolumeFuser(drop_volume_ml=0.05, drop_fall_s=0.1)
    fuser.fuse_drop(0.05, 0.9, 9.0, 0.05, "titrating")            # first drop, nothing statistical yet
    fuser.add_statistical(0.10, 0.9, 10.0, 0.05, "titrating")     # the next drop formed half-way by now
    r = fuser.fuse_drop(0.10, 0.9, 10.5, 0.05, "titrating")       # left the tip at 10.4, after the estimate
    stat = r.channel_values[r.channels.index("statistical")]
    assert stat == pytest.approx(0.10 + 0.025)                    # half a drop still to come, on average
    r = fuser.fuse_drop(0.15, 0.9, 12.0, 0.05, "titrating")       # one more whole drop since
    assert r.channel_values[r.channels.index("statistical")] == pytest.approx(0.10 + 0.025 + 0.05)


def test_a_statistical_estimate_taken_after_the_drop_left_the_tip_stands_as_it_is():
    fuser = VolumeFuser(drop_volume_ml=0.05, drop_fall_s=0.1)
    fuser.add_statistical(0.05, 0.9, 10.45, 0.05, "titrating")    # the drop left at 10.4, lands at 10.5
    r = fuser.fuse_drop(0.05, 0.9, 10.5, 0.05, "titrating")
    assert r.channel_values[r.channels.index("statistical")] == pytest.approx(0.05)
    # a drop heard before the estimate arrived but that left the tip after its stamp still counts
    fuser.fuse_drop(0.10, 0.9, 12.0, 0.05, "titrating")
    fuser.add_statistical(0.09, 0.9, 11.8, 0.04, "titrating")
    r = fuser.fuse_drop(0.15, 0.9, 13.5, 0.05, "titrating")
    assert r.channel_values[r.channels.index("statistical")] == pytest.approx(0.09 + 0.025 + 0.05)


def test_the_audio_channel_adds_its_drop_to_the_record():
    fuser = VolumeFuser(drop_volume_ml=0.05)
    fuser.add_statistical(1.00, 0.9, 10.0, 0.05, "titrating")
    r = fuser.fuse_drop(1.20, 0.9, 9.0, 0.05, "titrating")        # its own total has drifted 0.2 mL away
    assert r.channel_values[r.channels.index("audio")] == pytest.approx(0.0 + 0.05)
    assert fuser.recorded_ml == pytest.approx(r.value)
    r2 = fuser.fuse_drop(1.25, 0.9, 9.5, 0.05, "titrating")
    assert r2.channel_values[r2.channels.index("audio")] == pytest.approx(r.value + 0.05)
    # with the statistical channel gone (gated), the record counts drops on from where it was
    fuser.add_failure(11.0, "sensor_timeout", "halt", "statistical")
    r3 = fuser.fuse_drop(1.30, 0.9, 11.0, 0.05, "titrating")
    assert r3.value == pytest.approx(r2.value + 0.05)


def test_a_bad_fall_time_is_refused():
    with pytest.raises(RecordConfigError):
        VolumeFuser(drop_fall_s=-0.1)
    with pytest.raises(RecordConfigError):
        VolumeFuser(drop_fall_s=math.nan)
