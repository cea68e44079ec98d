"""The dissolution watch on MuJoCo renders of the front camera (issue 23): the twin's undissolved solid is
drawn in the scene (sim/mujoco_solid.py: grains, a pile, a cloud over the stir bar), and the watch, given the
camera's intrinsics and depth, finds the beaker's floor from the tag's 3-D pose (perception/beaker_floor.py)
and tells solid from clear liquid. Skips where no GL renders."""
import numpy as np
import pytest

from agentchemist.paths import urdf_file
from agentchemist.perception.dissolution import DissolutionWatch
from agentchemist.perception.tag_pose import CameraModel
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.mujoco_gl import NO_GL_REASON, select_gl
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(not select_gl(), reason=NO_GL_REASON)


@pytest.fixture(scope="module")
def stirred(tmp_path_factory):
    """nacl_weighing's beaker on the running stirrer in the MuJoCo backend; render(grams) -> (rgb, camera,
    depth) of the front camera with that much solid left."""
    from agentchemist.sim.arm_backends import make_arm_backend

    twin = LabTwin(load_scenario(REPO / "config" / "scenarios" / "nacl_weighing.yaml"))
    twin.step(1.0)
    arms = make_arm_backend("mujoco", twin, urdf_file(), tmp_path_factory.mktemp("assets"))
    clock = {"t": 1.0}

    def render(grams: float, beaker_on: str = "stirrer"):
        clock["t"] += 0.01  # (the twin dissolves while it steps: keep it short, the mass is what was set)
        if beaker_on != _on(twin):
            twin.move_labware("beaker_main", clock["t"], on=beaker_on)
            twin.set_stirrer(beaker_on == "stirrer", clock["t"])
        twin.dissolver.solid_g = grams  # the twin's undissolved mass, as its Dissolver keeps it
        twin.dissolver.added_g = max(twin.dissolver.added_g, grams)
        rgb, depth, k = arms.render("front", clock["t"])
        return rgb, CameraModel.from_camera_info(k.ravel(), [], rgb.shape[1], rgb.shape[0]), depth

    yield render
    arms.physics.close()


def _on(twin) -> str:
    return next(i.on for i in twin.scene_state()["items"] if i.id == "beaker_main")


def test_the_render_shows_solid_and_the_watch_reads_it(stirred):
    watch = DissolutionWatch()
    rgb_clear, camera, depth = stirred(0.0)
    clear = watch.measure(rgb_clear, camera, depth)
    assert clear.posed and clear.score < watch.config.clear_below, clear  # clear water over the dark plate
    hazes = []
    for grams in (2.5, 0.5, 0.05, 0.02):  # a dense cloud ... a faint haze
        rgb, camera, depth = stirred(grams)
        assert not np.array_equal(rgb, rgb_clear)
        m = watch.measure(rgb, camera, depth)
        assert m.score >= 1.0, (grams, m)
        hazes.append(m.haze)
    assert hazes == sorted(hazes, reverse=True) and hazes[0] > 0.8  # the cloud thins as the solid dissolves


def test_the_watch_declares_dissolved_on_the_render_only_after_the_solid_is_gone(stirred):
    watch = DissolutionWatch()
    states = [watch.update(float(t), *stirred(g)) for t, g in enumerate((1.0, 0.3, 0.05, 0.02))]
    assert all(s.solid_visible for s in states) and not any(s.dissolved for s in states)
    after = [watch.update(float(t), *stirred(0.0)) for t in range(4, 9)]
    assert not after[0].solid_visible
    assert after[-1].dissolved and after[-1].armed
    again = watch.update(9.0, *stirred(0.2))
    assert again.solid_visible and not again.dissolved  # more solid: dissolved is taken back


def test_a_camera_model_of_another_size_is_refused(stirred):
    from agentchemist.perception.dissolution import FrameError

    rgb, camera, depth = stirred(0.5)
    half = CameraModel.from_camera_info((camera.k * [[0.5], [0.5], [1.0]]).ravel(), [], camera.width // 2,
                                        camera.height // 2)
    with pytest.raises(FrameError, match="camera model"):
        DissolutionWatch().measure(rgb, half, depth)


def test_the_watch_follows_the_twins_stirred_dissolution_on_the_render(tmp_path):
    """The twin's own dissolution (2.5 g NaCl stirred in 50 mL, 30 s), rendered at 1 Hz: every frame with
    more than 0.01 g left shows solid (the haze falls from 1.0 at 2.3 g to 0.11 at 0.01 g), the frames go
    clear below about 0.003 g, and "dissolved" comes within 1 s before to 3 s after the twin's last crystal."""
    from agentchemist.sim.arm_backends import make_arm_backend

    twin = LabTwin(load_scenario(REPO / "config" / "scenarios" / "nacl_weighing.yaml"))
    twin.step(1.0)
    arms = make_arm_backend("mujoco", twin, urdf_file(), tmp_path)
    try:
        twin.dissolver.add_solid(2.5)  # as poured on the balance
        twin.move_labware("beaker_main", 1.0, on="stirrer")
        twin.set_stirrer(True, 1.0)
        watch, rows, t = DissolutionWatch(), [], 1.0
        while t < 45.0:
            t += 1.0
            rgb, depth, k = arms.render("front", t)
            state = watch.update(t, rgb, CameraModel.from_camera_info(k.ravel(), [], rgb.shape[1], rgb.shape[0]),
                                 depth)
            rows.append((t, twin.dissolver.solid_g, state))
            if state.dissolved:
                break
        twin.step(t + 5.0)  # to the last crystal, if a few micrograms were left
    finally:
        arms.physics.close()
    missed = [(t, g, s.score) for t, g, s in rows if g > 0.01 and not s.solid_visible]
    assert not missed, missed
    done = twin.dissolver.complete_at
    assert done is not None and rows[-1][2].dissolved
    assert -1.0 <= rows[-1][0] - done <= 3.0, (rows[-1][0], done)


def test_a_reference_frame_of_clear_water_calibrates_the_clear_level(stirred):
    """On a real camera C is measured, not configured: the beaker with clear water on the stirrer."""
    from agentchemist.perception.dissolution import DissolutionError

    watch = DissolutionWatch()
    ref = watch.reference(*stirred(0.0))
    assert watch.has_reference and abs(ref.liquid_level - watch.view.clear_level) < 3.0
    assert watch.measure(*stirred(0.05)).score >= 1.0 and watch.measure(*stirred(0.0)).score < 0.5
    with pytest.raises(DissolutionError, match="not clear"):
        DissolutionWatch().reference(*stirred(1.0))  # a cloudy beaker is no reference
