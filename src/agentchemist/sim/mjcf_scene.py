"""The MuJoCo scene: the robot from the URDF, the bench bodies of :mod:`.scene_model`, cameras and actuators.

The robot is not re-described here: MuJoCo's own URDF importer compiles urdf/agentchemist_aloha.urdf (the
xacro output) and the saved MJCF is extended with what a URDF cannot say:

- a position actuator per commanded joint (<side>_joint1..6, <side>_gripper), gains below, force limited to
  the URDF's effort; joint armature (the geared motors' reflected inertia) keeps the stiff loop stable at
  2 ms with the implicit-fast integrator;
- gravity compensation on the arm links (the Piper's firmware compensates gravity too);
- the gripper's centring finger follows at -0.5 x the opening (the URDF's mimic joint, as an equality);
- robot geoms collide with the lab but not with each other (the boxes are coarser than the links);
- a camera in each optical frame ``<name>_camera`` (MuJoCo cameras look along -z with y up; the optical
  frame looks along +z with y down: a half turn about x);
- the floor, lights, the bench and labware with their tag labels as textured boxes;
- in the beaker that holds the stir bar, the undissolved solid's grains and pile (hidden until the twin has
  solid there: :mod:`.mujoco_solid`).
"""
from __future__ import annotations

import math
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable

import cv2

from agentchemist.sim import mujoco_gl  # noqa: F401  (sets MUJOCO_GL before mujoco loads)
import mujoco  # noqa: E402

from agentchemist.workcell.robot import SIDES, camera_optical_frame
from agentchemist.sim.mujoco_solid import crystal_material, solid_geoms
from agentchemist.sim.scene_model import FLOOR_Z, SceneBody, SceneGeom, quat_wxyz, write_tag_textures

__all__ = ["ARM_KP", "CAMERAS", "CAMERA_FOVY_DEG", "CAMERA_SIZE", "GRIPPER_KP", "build_mjcf", "load_scene"]

CAMERAS = ("front", "left_wrist", "right_wrist")
CAMERA_FOVY_DEG = 58.0
#: The robot's cameras' colour stream (w, h) px: its Orbbec / RealSense units run at 640 x 480
#: (launch/agentchemist_robot_drivers.py). The twin's MuJoCo backend renders at this size, so the scene
#: check reads the tags at the resolution the robot has (at 320 x 240 none of them decodes).
CAMERA_SIZE = (640, 480)
ARM_KP, ARM_KV, ARMATURE = 300.0, 8.0, 0.02     # N m/rad, N m s/rad, kg m^2
GRIPPER_KP, GRIPPER_KV = 400.0, 8.0             # N/m (a 10 N squeeze at 25 mm past contact), N s/m
FINGER_FRICTION = "1.2 0.02 0.002"
ARM_RGBA = {"link6": "0.25 0.25 0.27 1", "finger": "0.08 0.08 0.08 1"}
ROBOT_RGBA = {"base_link": "0.25 0.25 0.27 1", "camera_link": "0.05 0.05 0.05 1"}


def build_mjcf(bodies: Iterable[SceneBody], urdf_text: str, asset_dir: Path) -> str:
    """MJCF text of the whole scene; tag textures are written to ``asset_dir`` and named by absolute path."""
    bodies = list(bodies)
    root = _robot_mjcf(urdf_text)
    textures = {i: _mujoco_texture(p) for i, p in write_tag_textures(bodies, Path(asset_dir)).items()}
    _robot_additions(root)
    _world(root, bodies, textures)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode")


def load_scene(bodies: Iterable[SceneBody], urdf_text: str, asset_dir: Path) -> tuple[mujoco.MjModel, str]:
    """Compile the scene; returns the model and its MJCF text."""
    text = build_mjcf(bodies, urdf_text, asset_dir)
    return mujoco.MjModel.from_xml_string(text), text


def _mujoco_texture(path: Path) -> Path:
    """MuJoCo maps a 2-D texture onto a box's -x face mirrored left to right: store the label mirrored so
    that it shows upright and readable there, as printed (the tag's top edge up: perception reads the
    item's up from it; tests/unit/test_tag_pose.py checks the corners' order in a render)."""
    image = cv2.imread(str(path))
    out = path.with_name(path.stem + "_mjcf.png")
    cv2.imwrite(str(out), cv2.flip(image, 1))
    return out


# ------------------------------------------------------------------------------------------- robot
def _robot_mjcf(urdf_text: str) -> ET.Element:
    urdf = ET.fromstring(urdf_text.encode())
    for tag in ("ros2_control", "gazebo"):
        for el in urdf.findall(tag):
            urdf.remove(el)
    ext = ET.SubElement(urdf, "mujoco")
    ET.SubElement(ext, "compiler", fusestatic="false", balanceinertia="true", discardvisual="true")
    model = mujoco.MjModel.from_xml_string(ET.tostring(urdf, encoding="unicode"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "robot.xml"
        mujoco.mj_saveLastXML(str(path), model)
        return ET.parse(path).getroot()


def _robot_additions(root: ET.Element) -> None:
    root.set("model", "agentchemist_lab")
    option = root.find("option") if root.find("option") is not None else ET.SubElement(root, "option")
    # noslip: the pipette, leaning on the beaker's rim, crept on the soft contacts and fell over after
    # 250-500 s (its flag then out of sight: labware_missing in titration_cluttered); with MuJoCo's
    # no-slip pass it stays put for 800 s (it still turns slowly about its axis, 0.05 rad per 100 s).
    option.attrib.update(timestep="0.002", integrator="implicitfast", cone="elliptic", impratio="10",
                         noslip_iterations="5")
    visual = ET.SubElement(root, "visual")
    ET.SubElement(visual, "headlight", ambient="0.35 0.35 0.35", diffuse="0.45 0.45 0.45", specular="0.1 0.1 0.1")
    ET.SubElement(visual, "map", znear="0.01", zfar="20")
    ET.SubElement(visual, "global", offwidth="1280", offheight="960")
    bodies = {b.get("name"): b for b in root.iter("body")}
    joints = {j.get("name"): j for j in root.iter("joint")}
    actuator = ET.SubElement(root, "actuator")
    equality = ET.SubElement(root, "equality")
    for side in SIDES:
        for i in range(1, 7):
            name = f"{side}_joint{i}"
            j = joints[name]
            j.set("armature", str(ARMATURE))
            lo, hi = j.get("range").split()
            ET.SubElement(actuator, "position", name=name, joint=name, kp=str(ARM_KP), kv=str(ARM_KV),
                          ctrlrange=f"{lo} {hi}", forcerange="-100 100")
            bodies[f"{side}_link{i}"].set("gravcomp", "1")
        grip = f"{side}_gripper"
        lo, hi = joints[grip].get("range").split()
        ET.SubElement(actuator, "position", name=grip, joint=grip, kp=str(GRIPPER_KP), kv=str(GRIPPER_KV),
                      ctrlrange=f"{lo} {hi}", forcerange="-10 10")
        joints[f"{side}_gripper_centering"].set("armature", "0.001")
        joints[grip].set("armature", "0.001")
        ET.SubElement(equality, "joint", joint1=f"{side}_gripper_centering", joint2=grip, polycoef="0 -0.5 0 0 0",
                      solref="0.004 1")
        for finger in ("finger_a", "finger_b"):
            bodies[f"{side}_{finger}"].set("gravcomp", "1")
            for g in bodies[f"{side}_{finger}"].findall("geom"):
                g.set("friction", FINGER_FRICTION)
                g.set("condim", "4")
                g.set("rgba", ARM_RGBA["finger"])
        for g in bodies[f"{side}_link6"].findall("geom"):
            g.set("rgba", ARM_RGBA["link6"])
    for geom in root.find("worldbody").iter("geom"):
        # Robot boxes are coarse: they collide with the lab (bit 1) but not with each other.
        geom.set("contype", "2")
        geom.set("conaffinity", "1")
    for name, body in bodies.items():
        for key, rgba in ROBOT_RGBA.items():
            if name.endswith(key):
                for g in body.findall("geom"):
                    g.set("rgba", rgba)
        camera = name.rsplit("_color_optical_frame", 1)[0]
        if name == camera_optical_frame(camera) and camera in CAMERAS:
            ET.SubElement(body, "camera", name=camera, quat="0 1 0 0",
                          fovy=str(CAMERA_FOVY_DEG))
    missing = set(CAMERAS) - {c.get("name") for c in root.iter("camera")}
    if missing:
        raise ValueError(f"the URDF has no optical frame for cameras {sorted(missing)}")


# ------------------------------------------------------------------------------------------- world
def _fmt(values: Iterable[float]) -> str:
    return " ".join(f"{v:.6g}" for v in values)


def _world(root: ET.Element, bodies: list[SceneBody], textures: dict[int, Path]) -> None:
    asset = root.find("asset") if root.find("asset") is not None else ET.SubElement(root, "asset")
    ET.SubElement(asset, "texture", name="floor_tex", type="2d", builtin="checker", rgb1="0.62 0.62 0.60",
                  rgb2="0.55 0.55 0.53", width="256", height="256")
    ET.SubElement(asset, "material", name="floor", texture="floor_tex", texrepeat="8 8")
    crystal_material(asset)
    for marker_id, path in textures.items():
        ET.SubElement(asset, "texture", name=f"tag_{marker_id}", type="2d", file=str(Path(path).resolve()))
        ET.SubElement(asset, "material", name=f"tag_{marker_id}", texture=f"tag_{marker_id}", specular="0.1")
    world = root.find("worldbody")
    ET.SubElement(world, "geom", name="floor", type="plane", size="5 5 0.1", pos=f"0 0 {FLOOR_Z}", material="floor")
    # No shadow maps: on a software GL (Mesa llvmpipe, no GPU) they cost 3x the frame (bench/physics.py).
    ET.SubElement(world, "light", name="ceiling", pos="0.6 0 2.6", dir="0 0 -1", diffuse="0.55 0.55 0.55",
                  castshadow="false")
    ET.SubElement(world, "light", name="fill", pos="-0.5 0.8 2.0", dir="0.5 -0.4 -1", diffuse="0.25 0.25 0.25",
                  castshadow="false")
    for body in bodies:
        el = ET.SubElement(world, "body", name=body.name, pos=_fmt(body.pos))
        if body.free:
            ET.SubElement(el, "freejoint", name=f"{body.name}_free")
        for i, g in enumerate(body.geoms):
            el.append(_geom(g, f"{body.name}_{g.name or i}", body))
        if any(g.name == "stir_bar" for g in body.geoms):
            el.extend(solid_geoms(body))
        if body.tag is not None:
            s = body.tag.side_m * (1.0 + 2.0 * 0.25)
            # A box's -x face shows the 2-D texture upright when the label is turned a quarter about x.
            tilt = body.tag.tilt_rad  # about y: the face's normal (-x) turns up by tilt
            ET.SubElement(el, "geom", name=f"{body.name}_tag", type="box", size=_fmt((0.0005, s / 2.0, s / 2.0)),
                          pos=_fmt(body.tag.pos), quat=_fmt((math.cos(tilt / 2.0), 0.0, math.sin(tilt / 2.0), 0.0)),
                          material=body.tag.texture, contype="0", conaffinity="0", mass="0")


def _geom(g: SceneGeom, name: str, body: SceneBody) -> ET.Element:
    sx, sy, sz = g.size
    attrs = {"name": name, "pos": _fmt(g.pos), "quat": _fmt(quat_wxyz(g.quat)), "rgba": _fmt(g.rgba)}
    if g.shape == "box":
        attrs.update(type="box", size=_fmt((sx / 2.0, sy / 2.0, sz / 2.0)))
    elif g.shape == "cylinder":
        attrs.update(type="cylinder", size=_fmt((sx / 2.0, sz / 2.0)))
    elif g.shape == "capsule":
        attrs.update(type="capsule", size=_fmt((sx / 2.0, sz / 2.0 - sx / 2.0)))
    elif math.isclose(sx, sz) and math.isclose(sx, sy):
        attrs.update(type="sphere", size=_fmt((sx / 2.0,)))
    else:
        attrs.update(type="ellipsoid", size=_fmt((sx / 2.0, sy / 2.0, sz / 2.0)))
    if g.name in ("liquid", "stir_bar"):  # display: the pipette does not stand on the liquid or the bar
        attrs.update(contype="0", conaffinity="0")
    if body.free:
        share = body.mass_kg / max(len(body.geoms), 1)
        attrs.update(mass=f"{share:.6g}", friction="1.0 0.02 0.002", condim="4")
    return ET.Element("geom", attrs)

