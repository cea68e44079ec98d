"""A MuJoCo render of the front camera over a scenario's generated lab scene, with each tag's true position
in the camera's optical frame from the model (for the 3-D tag pose tests: tests/unit/test_tag_pose.py and
tests/graph/test_scene_poses.py). Skips the calling test where no GL renders."""
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO


def front_render(scenario: str, asset_dir: Path) -> dict:
    """rgb (H x W x 3 uint8), depth (m, float64, 0 = no return), truth (item id -> its tag's printed
    centre in the optical frame, m), camera (the CameraModel of the render), k (3 x 3), bodies."""
    from agentchemist.perception.tag_pose import CameraModel
    from agentchemist.sim.lab import LabTwin
    from agentchemist.sim.mujoco_gl import NO_GL_REASON, select_gl

    if not select_gl():
        pytest.skip(NO_GL_REASON)
    from agentchemist.sim import mjcf_scene
    from agentchemist.sim.mujoco_arms import intrinsics
    from agentchemist.sim.scenario import load_scenario
    from agentchemist.sim.scene_model import twin_scene

    mujoco = mjcf_scene.mujoco
    bodies = twin_scene(LabTwin(load_scenario(REPO / "config" / "scenarios" / f"{scenario}.yaml")))
    model, _ = mjcf_scene.load_scene(bodies, (REPO / "urdf" / "agentchemist_aloha.urdf").read_text(), asset_dir)
    data = mujoco.MjData(model)
    while data.time < 0.5:  # the pipette settles on the rim, as in the backend
        mujoco.mj_step(model, data)
    w, h = mjcf_scene.CAMERA_SIZE
    with mujoco.Renderer(model, h, w) as renderer:
        renderer.update_scene(data, "front")
        rgb = renderer.render()
        renderer.enable_depth_rendering()
        renderer.update_scene(data, "front")
        depth = renderer.render().astype(np.float64)
    cam = model.camera("front").id
    r_optical = data.cam_xmat[cam].reshape(3, 3) @ np.diag([1.0, -1.0, -1.0])  # MuJoCo: -z forward, y up
    truth = {}
    for b in bodies:
        if b.tag is not None:
            g = model.geom(f"{b.name}_tag").id
            face = data.geom_xpos[g] - data.geom_xmat[g].reshape(3, 3)[:, 0] * 0.0005  # the printed -x face
            truth[b.name] = r_optical.T @ (face - data.cam_xpos[cam])
    k = intrinsics(w, h)
    camera = CameraModel.from_camera_info(k.ravel(), [0.0] * 5, w, h)
    return {"rgb": rgb, "depth": depth, "truth": truth, "camera": camera, "k": k, "bodies": bodies}
