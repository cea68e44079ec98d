"""Undissolved solid from the front camera: the twin's NaCl weighing run (pour 2.5 g on the balance, move the
beaker onto the stirrer, stir) watched at 1 Hz against the twin's own dissolution truth; titration and
clear-water frames that must not look like solid; frames the watch must refuse."""
import math

import numpy as np
import pytest

from agentchemist.perception.dissolution import (BeakerNotFoundError, DissolutionConfig, DissolutionError,
                                                 DissolutionWatch, FrameError)
from agentchemist.sim import drawing as dr
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

SCENARIOS = REPO / "config" / "scenarios"
#: Below this much undissolved NaCl (g) the stirred beaker may show no solid; above it every frame must.
#: (The twin draws 3 floor grains at 0.002 g and 2 at 0.001 g; the watch needs 2.)
SMALLEST_STIRRED_G = 0.002
#: An unstirred pile lies partly over the stir bar; from this much on it must show (3 grains at 0.2 g).
SMALLEST_PILE_G = 0.5


def twin(name: str, noise_sd: float | None = None, seed: int | None = None) -> LabTwin:
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    update = {}
    if noise_sd is not None:
        update["cameras"] = sc.cameras.model_copy(update={"noise_sd": noise_sd})
    if seed is not None:
        update["seed"] = seed
    return LabTwin(sc.model_copy(update=update) if update else sc)


def run_weighing(noise_sd: float, seed: int | None = None, use_reference: bool = True):
    """The NaCl experiment on the twin with a watch fed from its front camera at 1 Hz from the first pour.
    Returns (rows, complete_at, stir_start): rows are (t, solid_g in the beaker, stirred?, state or the
    error the frame raised)."""
    tw = twin("nacl_weighing", noise_sd, seed)
    watch = DissolutionWatch()
    t = 1.0
    if use_reference:  # the beaker with clear water on the balance, before any solid
        watch.reference(tw.render_camera("front", t))
    rows = []

    def look(now: float, stirred: bool) -> None:
        frame = tw.render_camera("front", now)
        try:
            state = watch.update(now, frame)
        except DissolutionError as exc:
            state = exc
        rows.append((now, tw.dissolver.solid_g, stirred, state))

    tw.tare_balance(t)
    tw.pour("left", 15.0, t)  # tilt until the powder flows, hold the tilt until about 2.5 g are in
    next_frame = 2.0
    while tw.dissolver.added_g < 2.45:
        t = round(t + 0.1, 6)
        tw.step(t)
        if tw.bottle.flow_g_s() > 0.8 and tw.bottle.tilt_rate_deg_s > 0:
            tw.pour("left", 0.0, t)
        if t >= next_frame:
            look(t, False)
            next_frame += 1.0
        assert t < 60.0, "the bottle did not pour"
    tw.pour("left", -60.0, t)
    t = math.floor(t) + 3.0
    look(t, False)
    assert tw.dissolver.added_g == pytest.approx(2.5, abs=0.25)
    tw.move_labware("beaker_main", t, on="stirrer")
    look(t + 1.0, False)  # on the stirrer, not yet stirring: the pile
    stir_start = t + 2.0
    tw.set_stirrer(True, stir_start)
    for k in range(1, 55):
        look(stir_start + k, True)
    complete_at = tw.truth()["weighing"]["dissolution_complete_at"]
    assert complete_at is not None and complete_at < stir_start + 45
    return rows, complete_at, stir_start


@pytest.fixture(scope="module", params=[2.0, 6.0], ids=["camera_noise_2", "camera_noise_6"])
def weighing_run(request):
    return run_weighing(request.param)


# ---------------------------------------------------------------- the twin's NaCl run
def test_solid_is_seen_while_any_measurable_amount_is_left(weighing_run):
    rows, complete_at, stir_start = weighing_run
    stirred = [(t, g, s) for t, g, stir, s in rows if stir]
    assert all(not isinstance(s, Exception) for _, _, s in stirred)
    for t, g, s in stirred:
        if g > SMALLEST_STIRRED_G:
            assert s.solid_visible, (t - stir_start, g, s.measurement)
    # both kinds of evidence take part: a cloud while much is suspended, floor grains at the end
    early = [s.measurement for t, g, s in stirred if g > 1.5]
    late = [s.measurement for t, g, s in stirred if 0.002 < g < 0.05]
    assert early and all(m.haze >= 0.2 for m in early)
    assert late and all(m.grain_area_px >= 2 for m in late)
    # the pile on the balance and on the idle stirrer shows once there is enough of it
    piles = [(g, s) for t, g, stir, s in rows if not stir and not isinstance(s, Exception)]
    assert any(g > SMALLEST_PILE_G for g, _ in piles)
    assert all(s.solid_visible for g, s in piles if g > SMALLEST_PILE_G)


def test_dissolved_is_declared_seconds_after_the_truth_and_never_before(weighing_run):
    rows, complete_at, stir_start = weighing_run
    states = [(t, g, s) for t, g, _, s in rows if not isinstance(s, Exception)]
    declared = [t for t, g, s in states if s.dissolved]
    assert declared, "never declared dissolved"
    first = declared[0]
    for t, g, s in states:
        if g > SMALLEST_STIRRED_G:
            assert not s.dissolved, (t, g)
    # the clear run that led to it began once the solid was below the detection limit
    start = next(s for t, g, s in states if t == first).clear_for_s
    solid_at_start = max(g for t, g, s in states if first - start - 1e-9 <= t <= first)
    assert solid_at_start <= SMALLEST_STIRRED_G
    delay = first - complete_at
    # 3 s hold at 1 Hz after the last grains go out (about 1 s before the twin's last crystal)
    assert -1.0 <= delay <= 4.5, delay
    # and it stays dissolved
    assert all(s.dissolved for t, g, s in states if t >= first)


def test_without_a_reference_frame_the_decision_is_the_same():
    rows, complete_at, _ = run_weighing(2.0, seed=11, use_reference=False)
    states = [(t, g, s) for t, g, stir, s in rows if stir]
    assert all(s.solid_visible for t, g, s in states if g > SMALLEST_STIRRED_G)
    first = next(t for t, g, s in states if s.dissolved)
    assert -1.0 <= first - complete_at <= 4.5


def test_more_solid_takes_dissolved_back():
    tw = twin("nacl_weighing")
    watch = DissolutionWatch()
    t = 1.0
    tw.move_labware("beaker_main", t, on="stirrer")
    tw.set_stirrer(True, t)
    tw.dissolver.add_solid(0.3)
    # (the twin dissolves any portion in 30 s stirred)
    states = [watch.update(t + k, tw.render_camera("front", t + k)) for k in range(1, 40)]
    assert states[0].solid_visible and not any(s.dissolved for s in states[:5])
    assert states[-1].dissolved
    tw.dissolver.add_solid(0.05)
    again = watch.update(t + 40, tw.render_camera("front", t + 40))
    assert again.solid_visible and not again.dissolved


# ---------------------------------------------------------------- no solid
def titration_frames(name: str, noise_sd: float) -> list[np.ndarray]:
    """Front frames of a titration: pipette resting in the beaker, grasped with titrant drawn, squeezed
    drop by drop (drops falling into the stirred liquid), and after titrant was added."""
    tw = twin(name, noise_sd)
    sp = tw.scenario.pipette
    t = 0.5
    frames = [tw.render_camera("front", t)]
    contact = sp.contact_opening_mm / 1000.0
    tw.command_gripper(sp.held_by, contact - 0.0005, t)
    t += 1.5
    tw.draw(next(iter(tw.scenario.titrant)), 10.0, t)
    frames.append(tw.render_camera("front", t))
    for k in range(12):
        tw.command_gripper(sp.held_by, contact - 0.0005 - 0.0003 * (k + 1), t)
        t += 0.25
        frames.append(tw.render_camera("front", t))
    for ml in (5.0, 20.0):
        tw.beaker.add_liquid(ml, dict(tw.scenario.titrant))
        tw._vessel.composition_changed()  # (as a landing drop does: the colour follows the new composition)
        t += 3.0
        frames.append(tw.render_camera("front", t))
    return frames


@pytest.mark.parametrize("name", ["hcl_naoh", "ca_edta", "acetic_naoh"])
@pytest.mark.parametrize("noise_sd", [2.0, 8.0])
def test_titration_frames_show_no_solid(name, noise_sd):
    watch = DissolutionWatch()
    scores = []
    for k, frame in enumerate(titration_frames(name, noise_sd)):
        state = watch.update(float(k), frame)
        assert not state.solid_visible and state.measurement.grain_area_px == 0, (k, state.measurement)
        assert not state.armed and not state.dissolved
        scores.append(state.score)
    if noise_sd <= 2.0:  # the default camera: every frame plainly clear
        assert max(scores) < watch.config.clear_below
    else:  # a noisy camera may make a frame faint (haze noise sd about 0.03), never solid
        assert np.mean(np.array(scores) < watch.config.clear_below) >= 0.8


@pytest.mark.parametrize("noise_sd", [2.0, 6.0])
def test_clear_water_is_clear_and_never_dissolved(noise_sd):
    tw = twin("nacl_weighing", noise_sd)
    watch = DissolutionWatch()
    watch.reference(tw.render_camera("front", 0.5))
    for k in range(10):
        state = watch.update(1.0 + k, tw.render_camera("front", 1.0 + k))
        assert not state.solid_visible and state.score < 0.5, state.measurement
        assert state.clear_for_s == pytest.approx(k)
        assert not state.dissolved  # nothing was ever seen to dissolve
    tw.move_labware("beaker_main", 12.0, on="stirrer")
    tw.set_stirrer(True, 12.0)
    m = watch.measure(tw.render_camera("front", 13.0))
    assert m.score < 0.5 and m.grain_area_px == 0


# ---------------------------------------------------------------- bad input
def test_frames_without_the_beaker_or_not_rgb_raise_and_change_nothing():
    tw = twin("nacl_weighing")
    watch = DissolutionWatch()
    tw.dissolver.add_solid(0.2)
    good = tw.render_camera("front", 1.0)
    assert watch.update(1.0, good).solid_visible
    with pytest.raises(FrameError):
        watch.update(2.0, good.astype(np.float32))
    with pytest.raises(FrameError):
        watch.update(2.0, good[:, :, 0])
    with pytest.raises(FrameError):
        watch.update(2.0, np.dstack([good, good[:, :, :1]]))
    with pytest.raises(FrameError):
        watch.measure([[1, 2, 3]])
    tw.inject_fault("labware_missing", 2.0, duration_s=5.0, id="beaker_main")
    with pytest.raises(BeakerNotFoundError):
        watch.update(3.0, tw.render_camera("front", 3.0))
    hidden = good.copy()  # the tag painted over (an arm in front of it)
    u, v, side = watch.measure(good).tag
    hidden[int(v - side):int(v + side), int(u - side):int(u + side)] = (90, 95, 100)
    with pytest.raises(BeakerNotFoundError, match="tag 1"):
        watch.update(3.0, hidden)
    assert issubclass(BeakerNotFoundError, DissolutionError) and issubclass(FrameError, ValueError)
    # none of that moved the watch: the next good frame continues from the first
    state = watch.update(3.0, good)
    assert state.solid_visible and state.armed  # two solid frames: the refused ones did not count
    with pytest.raises(DissolutionError, match="earlier"):
        watch.update(2.5, good)
    with pytest.raises(DissolutionError, match="finite"):
        watch.update(float("nan"), good)


def test_reference_must_be_clear():
    tw = twin("nacl_weighing")
    tw.move_labware("beaker_main", 1.0, on="stirrer")
    tw.set_stirrer(True, 1.0)
    tw.dissolver.add_solid(1.0)
    watch = DissolutionWatch()
    with pytest.raises(DissolutionError, match="not clear"):
        watch.reference(tw.render_camera("front", 1.0))
    assert not watch.has_reference


def test_a_camera_gap_restarts_the_clear_run():
    tw = twin("nacl_weighing")
    tw.move_labware("beaker_main", 1.0, on="stirrer")
    tw.dissolver.add_solid(0.3)
    tw.set_stirrer(True, 1.0)
    solid = tw.render_camera("front", 1.0)
    tw.dissolver.solid_g = 0.0
    clear = tw.render_camera("front", 1.0)
    watch = DissolutionWatch(DissolutionConfig(clear_hold_s=3.0, min_clear_frames=3, max_gap_s=2.0))
    watch.update(0.0, solid)
    watch.update(1.0, solid)
    watch.update(2.0, clear)
    watch.update(3.0, clear)
    late = watch.update(10.0, clear)  # 7 s without frames: the run starts again here
    assert not late.dissolved and late.clear_for_s == 0.0
    watch.update(11.0, clear)
    assert not watch.update(12.0, clear).dissolved
    assert watch.update(13.0, clear).dissolved


def test_config_is_validated():
    with pytest.raises(ValueError, match="not a beaker tag"):
        DissolutionConfig(marker_id=2)
    with pytest.raises(ValueError, match="far > near"):
        DissolutionConfig(floor_v=(1.0, 7.0))
    with pytest.raises(ValueError, match="min_haze"):
        DissolutionConfig(min_haze=0.0)
    with pytest.raises(ValueError, match="arm_frames"):
        DissolutionConfig(arm_frames=0)


# ---------------------------------------------------------------- the twin's drawing of undissolved solid
def test_small_amounts_are_drawn_and_the_twin_draws_nothing_without_solid():
    look = dr.solid_appearance
    w = dr.beaker_size(100.0)[0]
    # stirred: a cloud growing with the suspended solid per volume, and floor grains down to milligrams
    assert look(2.5, 50.0, True, w)["turbidity"] > 0.7 > look(0.1, 50.0, True, w)["turbidity"] > 0.15
    assert look(2.5, 100.0, True, w)["turbidity"] < look(2.5, 50.0, True, w)["turbidity"]
    assert round(look(0.02, 50.0, True, w)["sparkles"]) >= 10 and round(look(0.001, 50.0, True, w)["sparkles"]) == 2
    # unstirred: a pile, no cloud
    pile = look(2.5, 50.0, False, w)
    assert pile["turbidity"] == 0.0 and 10 < 2 * pile["pile_r"] < w and pile["pile_h"] > 5
    assert look(0.0, 50.0, True, w) == {"turbidity": 0.0, "sparkles": 0.0, "pile_r": 0.0, "pile_h": 0.0}
    # in the image: only the beaker's inside changes, and a clear beaker is drawn exactly as without weighing
    tw = twin("nacl_weighing", 0.0)
    tw.move_labware("beaker_main", 1.0, on="stirrer")
    tw.set_stirrer(True, 1.0)
    clear = tw.render_camera("front", 1.0)
    tw.dissolver.add_solid(0.02)
    cloudy = tw.render_camera("front", 1.0)
    changed = np.argwhere(np.any(clear != cloudy, axis=2))
    assert len(changed) >= 10
    u, v = 214, 212 - dr.STIRRER_H  # the beaker stands on the stirrer's top plate
    bw, bh = dr.beaker_size(100.0)
    assert changed[:, 1].min() >= u - bw / 2 and changed[:, 1].max() <= u + bw / 2
    assert changed[:, 0].min() >= v - bh and changed[:, 0].max() <= v
    tw.dissolver.solid_g = 0.0
    assert np.array_equal(tw.render_camera("front", 1.0), clear)


def test_works_at_twice_the_resolution():
    sc = load_scenario(SCENARIOS / "nacl_weighing.yaml")
    items = [i.model_copy(update={"position": (2 * i.position[0], 2 * i.position[1])}) for i in sc.layout.items]
    sc = sc.model_copy(update={"cameras": sc.cameras.model_copy(update={"width": 640, "height": 480}),
                               "layout": sc.layout.model_copy(update={"items": items})})
    tw = LabTwin(sc)
    tw.move_labware("beaker_main", 1.0, on="stirrer")
    tw.set_stirrer(True, 1.0)
    watch = DissolutionWatch()
    assert watch.measure(tw.render_camera("front", 1.0)).score < 0.5
    for grams in (1.0, 0.02, 0.003):
        tw.dissolver.solid_g = grams
        assert watch.measure(tw.render_camera("front", 1.0)).score >= 1.0, grams
