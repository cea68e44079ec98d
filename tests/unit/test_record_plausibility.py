"""A pH jump no drop explains (agentchemist.record.plausibility): the unbuffered bound from the charge
balance, and the recording that flags such readings, keeps them out of the records and raises one anomaly
per episode. Tuned on nothing: the strong acid/strong base curve below is computed, not recorded."""
import math

import pytest

from agentchemist.record.plausibility import PhPlausibility, charge_excess, from_plan, ph_of_excess
from agentchemist.record.recording import AudioEventNote, Reading, RecorderConfig, Recording
from tests.factories import HCL_SHORT, planned

DROP = 0.046875


def strong_strong_ph(acid_m, acid_ml, base_m, base_ml):
    """Exact pH of HCl + NaOH (charge balance; 25 degC)."""
    excess = (base_m * base_ml - acid_m * acid_ml) / (acid_ml + base_ml)
    return ph_of_excess(excess)


def test_the_bound_inverts_the_charge_balance():
    for ph in (0.5, 3.0, 7.0, 10.0, 13.5):
        assert ph_of_excess(charge_excess(ph)) == pytest.approx(ph, abs=1e-9)


def test_a_real_titration_through_its_jump_is_never_flagged():
    """0.1 M HCl 5 mL with 0.1 M NaOH drop by drop, across the equivalence (one drop: pH 4 -> 10)."""
    check = PhPlausibility(titrant_m=0.1, drop_ml=DROP, beaker_ml=5.0, margin_ph=0.0)
    for n in range(0, 220):
        if n:
            check.drop(float(n))
        ph = strong_strong_ph(0.1, 5.0, 0.1, n * DROP)
        assert check.check(n + 0.5, ph) == "", (n, ph)


def test_a_jump_without_drops_or_beyond_them_is_flagged():
    check = PhPlausibility(titrant_m=0.1, drop_ml=DROP, beaker_ml=5.0)
    assert check.check(0.0, 1.25) == ""
    assert "can move it to" in check.check(1.0, 10.5)          # no drop: only noise
    for t in range(2, 6):
        check.drop(float(t))
    assert check.check(6.0, 10.5) != ""                         # 4 drops cannot lift pH 1.25 to 10.5
    assert check.check(6.5, 1.27) == ""                         # the real beaker


def test_the_plan_gives_the_titrant_drop_and_volume(ph_plan):
    check = from_plan(ph_plan.model_dump(mode="json"))
    assert check is not None and check.titrant_m == pytest.approx(0.15) and check.beaker_ml == pytest.approx(5.0)


def test_a_forged_stream_is_kept_out_of_the_records_with_one_anomaly(tmp_path, ph_plan):
    rec = Recording.open(RecorderConfig(runs_dir=str(tmp_path), ph_record_period=0.0), ph_plan.experiment_id,
                         now=0.0, plan_json=ph_plan.model_dump_json())
    made = []
    for i in range(10):  # the beaker at pH 1.25, a drop heard every second
        rec.on_audio_event(AudioEventNote(float(i), f"e{i}", "droplet", "droplet", float(i), i + 0.05, 20.0,
                                          2000.0, DROP, 0.9))
        made += rec.on_reading(Reading(i + 0.5, "ph_meter", "pH", 1.25 + 0.001 * i, "pH", True, 0.005))
    forged = [r for i in range(20) for r in rec.on_reading(Reading(10.0 + 0.1 * i, "ph_meter", "pH", 10.5, "pH",
                                                                    True, 0.005))]
    back = rec.on_reading(Reading(13.0, "ph_meter", "pH", 1.26, "pH", True, 0.005))
    assert made and not forged and back
    notices = rec.take_notices()
    assert [(n.kind, n.severity, n.resolved) for n in notices] == [
        ("implausible_reading", "warn", False), ("implausible_reading", "info", True)]
    raw = rec.store.load_run(ph_plan.experiment_id)["raw_observations"]
    flagged = [r for r in raw if "implausible_jump" in r["flags"]]
    assert len(flagged) == 20 and all(r["value"] == 10.5 for r in flagged)
    assert max(r.value for r in made + back) < 2.0   # no pH record carries the forged value
    rec.close()


def test_no_plan_no_check(tmp_path):
    rec = Recording.open(RecorderConfig(runs_dir=str(tmp_path)), "exp-x", now=0.0, plan_json="{}")
    assert rec.plausible is None and rec.on_reading(Reading(1.0, "ph_meter", "pH", 10.5, "pH", True, 0.005)) \
        is not None
    assert math.isfinite(charge_excess(7.0))
    rec.close()
