"""One scene source: the bench description and a scenario's layout -> the MuJoCo scene and the Gazebo world.

MuJoCo compiles the MJCF (its own parser and compiler). No SDFormat parser installs from PyPI (libsdformat's
Python bindings come only with Gazebo from apt; the PyPI names ``sdformat`` and ``pysdf`` are unrelated
packages), so the SDF is checked against the structure SDFormat 1.9's schema requires of the elements it
uses (sdf_problems below: required attributes and children, value arities, unique names, files that exist).
"""
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from agentchemist.workcell.tags import MARKER_TABLE
from agentchemist.perception.scene import describe_scene
from agentchemist.perception.tags import detect_markers
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.mjcf_scene import CAMERA_SIZE, CAMERAS, load_scene, mujoco
from agentchemist.sim.scenario import load_scenario
from agentchemist.sim.scene_model import twin_scene
from agentchemist.sim.sdf_world import build_sdf
from agentchemist.sim.mujoco_gl import NO_GL_REASON, select_gl
from tests.conftest import REPO

REQUIRES_GL = pytest.mark.skipif(not select_gl(), reason=NO_GL_REASON)

URDF = REPO / "urdf" / "agentchemist_aloha.urdf"


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    twin = LabTwin(load_scenario(REPO / "config" / "scenarios" / "hcl_naoh.yaml"))
    bodies = twin_scene(twin)
    assets = tmp_path_factory.mktemp("assets")
    model, text = load_scene(bodies, URDF.read_text(), assets)
    return {"twin": twin, "bodies": bodies, "model": model, "mjcf": text, "assets": assets}


def test_every_present_layout_item_is_a_body_with_its_tag(scene):
    items = {i.id: i for i in scene["twin"].scene_state()["items"] if i.present}
    bodies = {b.name: b for b in scene["bodies"]}
    assert set(items) | {"bench"} == set(bodies)
    for item_id, item in items.items():
        assert bodies[item_id].kind == item.kind
        assert bodies[item_id].tag is not None and bodies[item_id].tag.marker_id == item.marker_id
        assert MARKER_TABLE[item.marker_id].labware_id == item_id
    assert [b.name for b in scene["bodies"] if b.free] == ["pipette"]


def test_mujoco_loads_the_scene_with_robot_actuators_and_cameras(scene):
    model = scene["model"]
    names = {model.body(i).name for i in range(model.nbody)}
    assert {"left_link6", "right_link6", "beaker_main", "pipette", "bench", "stirrer"} <= names
    actuators = {model.actuator(i).name for i in range(model.nu)}
    assert actuators == {f"{s}_{j}" for s in ("left", "right") for j in
                         ("joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "gripper")}
    assert {model.camera(i).name for i in range(model.ncam)} == set(CAMERAS)
    assert {model.texture(i).name for i in range(model.ntex)} >= {f"tag_{b.tag.marker_id}" for b in scene["bodies"]
                                                                  if b.tag}
    # The robot stands clear of the bench: nothing touches at rest but the pipette in its beaker.
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    touching = {(model.body(model.geom_bodyid[c.geom1]).name, model.body(model.geom_bodyid[c.geom2]).name)
                for c in data.contact[:data.ncon]}
    assert all("pipette" in pair or "beaker_main" in pair for pair in touching), touching


@REQUIRES_GL
def test_front_camera_sees_the_tags_the_bench_prints(scene):
    """The tag labels are real textures: at the robot's 640 x 480 perception's ArUco detector decodes every
    tag the task needs in a MuJoCo render of the front camera, and the scene check (the one the vision
    supervisor runs before anything moves) finds its three preconditions met from their positions. The
    physics settles first, as the backend's does: the pipette leans on the beaker's rim, its flag up."""
    model = scene["model"]
    data = mujoco.MjData(model)
    while data.time < 0.5:
        mujoco.mj_step(model, data)
    width, height = CAMERA_SIZE
    with mujoco.Renderer(model, height, width) as renderer:
        renderer.update_scene(data, "front")
        rgb = renderer.render()
    found = set(detect_markers(rgb))
    tagged = {b.tag.marker_id for b in scene["bodies"] if b.tag}
    # beaker 1, pipette 2, stirrer 3, probe 4, meter 5, titrant bottle 6 (the stand's 14 is partly hidden)
    assert found <= tagged and {1, 2, 3, 4, 5, 6} <= found, found
    desc = describe_scene(rgb)
    assert desc.checks == {"beaker_on_stirrer": True, "probe_immersed": True, "pipette_in_beaker": True}, desc.reasons
    # At the scenarios' drawing size (320 x 240) the same tags are 10 px or less and do not decode: the
    # backend renders at the robot's size for that reason.
    with mujoco.Renderer(model, 240, 320) as renderer:
        renderer.update_scene(data, "front")
        assert not {1, 3, 4} <= set(detect_markers(renderer.render()))


def sdf_problems(root: ET.Element, base: Path | None = None) -> list[str]:
    """What SDFormat 1.9 requires of the elements the world uses."""
    problems = []

    def floats(el, n, where):
        try:
            values = [float(v) for v in (el.text or "").split()]
        except ValueError:
            values = []
        if len(values) != n:
            problems.append(f"{where}: expected {n} numbers, got {el.text!r}")
        return values

    if root.tag != "sdf" or root.get("version") not in ("1.9", "1.10", "1.11"):
        problems.append("root must be <sdf version=1.9+>")
    worlds = root.findall("world")
    if len(worlds) != 1 or not worlds[0].get("name"):
        return problems + ["exactly one named <world>"]
    world = worlds[0]
    for plugin in world.findall("plugin"):
        if not plugin.get("filename") or not plugin.get("name"):
            problems.append("a world plugin needs filename and name")
    names = [m.get("name") for m in world.findall("model")]
    if None in names or len(set(names)) != len(names):
        problems.append(f"model names must be present and unique: {names}")
    for model in world.findall("model"):
        where = model.get("name")
        for pose in model.iter("pose"):
            floats(pose, 6, f"{where} pose")
        links = model.findall("link")
        if not links:
            problems.append(f"{where}: no link")
        static = (model.findtext("static") or "false").strip() == "true"
        for link in links:
            if not static:
                mass = link.find("inertial/mass")
                if mass is None or float(mass.text) <= 0:
                    problems.append(f"{where}: a dynamic link needs a positive mass")
            seen = set()
            for kind in ("visual", "collision"):
                for el in link.findall(kind):
                    if not el.get("name") or (kind, el.get("name")) in seen:
                        problems.append(f"{where}: {kind} names must be present and unique")
                    seen.add((kind, el.get("name")))
                    shapes = list(el.find("geometry") if el.find("geometry") is not None else [])
                    if len(shapes) != 1:
                        problems.append(f"{where}/{el.get('name')}: geometry needs exactly one shape")
                        continue
                    shape = shapes[0]
                    need = {"box": [("size", 3)], "cylinder": [("radius", 1), ("length", 1)],
                            "sphere": [("radius", 1)], "ellipsoid": [("radii", 3)],
                            "capsule": [("radius", 1), ("length", 1)],  # SDFormat 1.9's capsule
                            "plane": [("normal", 3), ("size", 2)]}.get(shape.tag)
                    if need is None:
                        problems.append(f"{where}: unknown shape {shape.tag}")
                        continue
                    for child, n in need:
                        value = shape.find(child)
                        if value is None:
                            problems.append(f"{where}/{shape.tag}: missing <{child}>")
                        elif shape.tag != "plane" and min(floats(value, n, f"{where}/{child}") or [0]) <= 0:
                            problems.append(f"{where}/{shape.tag}: {child} must be positive")
                    albedo = el.find("material/pbr/metal/albedo_map")
                    texture = Path(albedo.text) if albedo is not None else None
                    if texture is not None and not texture.is_absolute() and base is not None:
                        texture = base / texture
                    if texture is not None and not texture.is_file():
                        problems.append(f"{where}: texture {albedo.text} does not exist")
    return problems


def test_sdf_world_has_the_same_bodies_and_the_required_structure(scene, tmp_path):
    text = build_sdf(scene["bodies"], tmp_path)
    root = ET.fromstring(text.encode())
    assert sdf_problems(root) == []
    models = {m.get("name"): m for m in root.find("world").findall("model")}
    assert set(models) == {b.name for b in scene["bodies"]} | {"ground_plane"}
    for body in scene["bodies"]:
        pose = [float(v) for v in models[body.name].findtext("pose").split()]
        assert np.allclose(pose[:3], body.pos)
        if body.tag:
            assert models[body.name].find("link/visual[@name='tag']/material/pbr/metal/albedo_map") is not None
    assert models["pipette"].findtext("static") == "false"


def test_sdf_checker_catches_broken_worlds(scene, tmp_path):
    root = ET.fromstring(build_sdf(scene["bodies"], tmp_path).encode())
    box = root.find(".//box/size")
    box.text = "0.1 0.1"
    pipette = next(m for m in root.iter("model") if m.get("name") == "pipette")
    pipette.find("link/inertial/mass").text = "0"
    root.find("world").append(ET.Element("model", name="bench"))
    problems = sdf_problems(root)
    assert any("expected 3 numbers" in p for p in problems)
    assert any("positive mass" in p for p in problems)
    assert any("unique" in p for p in problems)
    assert any("no link" in p for p in problems)


def test_checked_in_gazebo_world_is_fresh(tmp_path):
    """worlds/lab.sdf (what gazebo.launch.py opens) is what `make worlds` writes now, textures included."""
    from agentchemist.sim.sdf_world import main

    worlds = REPO / "worlds"
    assert main(["--scenario", "hcl_naoh", "--out", str(tmp_path / "lab.sdf")]) == 0
    assert (worlds / "lab.sdf").read_text() == (tmp_path / "lab.sdf").read_text(), "stale world: run make worlds"
    for png in (tmp_path / "textures").glob("*.png"):
        assert (worlds / "textures" / png.name).read_bytes() == png.read_bytes()
    assert sdf_problems(ET.parse(worlds / "lab.sdf").getroot(), base=worlds) == []
