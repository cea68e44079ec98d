"""The Gazebo (Harmonic, SDFormat 1.9) lab world, written from the same bodies as the MuJoCo scene.

One ``<model>`` per body of :mod:`.scene_model` (the bench static, the pipette dynamic with its mass),
each tag label a thin box whose PBR albedo map is the tag PNG, plus the system plugins a Harmonic world
needs for what the launch file bridges: physics, user commands, the scene broadcaster, and the sensors
system (ogre2) that renders the robot's RGB-D cameras. The robot itself is spawned from
``robot_description`` by the launch file (xacro ``hardware:=gazebo``), not written here.

The world was not run here (no Gazebo on this machine); tests/unit/test_scene_worlds.py checks it against
SDFormat's required structure (see there).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Iterable

from agentchemist.sim.scene_model import FLOOR_Z, SceneBody, SceneGeom, rpy_of, write_tag_textures

__all__ = ["SDF_VERSION", "WORLD_PLUGINS", "build_sdf"]

SDF_VERSION = "1.9"
#: (filename, name) of the Harmonic system plugins the world loads.
WORLD_PLUGINS = (
    ("gz-sim-physics-system", "gz::sim::systems::Physics"),
    ("gz-sim-user-commands-system", "gz::sim::systems::UserCommands"),
    ("gz-sim-scene-broadcaster-system", "gz::sim::systems::SceneBroadcaster"),
    ("gz-sim-sensors-system", "gz::sim::systems::Sensors"),
    ("gz-sim-contact-system", "gz::sim::systems::Contact"),
)


def build_sdf(bodies: Iterable[SceneBody], asset_dir: Path, world_name: str = "lab",
              relative_to: Path | None = None) -> str:
    """SDF text of the lab world; tag PNGs are written to ``asset_dir`` and named by absolute path, or by
    path relative to ``relative_to`` (the folder the .sdf goes in: Gazebo resolves a relative albedo_map
    against the world file's folder)."""
    bodies = list(bodies)
    textures = write_tag_textures(bodies, Path(asset_dir))
    if relative_to is not None:
        textures = {i: Path(os.path.relpath(Path(p).resolve(), Path(relative_to).resolve())) for i, p in textures.items()}
    sdf = ET.Element("sdf", version=SDF_VERSION)
    world = ET.SubElement(sdf, "world", name=world_name)
    physics = ET.SubElement(world, "physics", name="1ms", type="ignored")
    ET.SubElement(physics, "max_step_size").text = "0.001"
    ET.SubElement(physics, "real_time_factor").text = "1.0"
    for filename, name in WORLD_PLUGINS:
        plugin = ET.SubElement(world, "plugin", filename=filename, name=name)
        if name.endswith("Sensors"):
            ET.SubElement(plugin, "render_engine").text = "ogre2"
    ET.SubElement(world, "gravity").text = "0 0 -9.81"
    scene = ET.SubElement(world, "scene")
    ET.SubElement(scene, "ambient").text = "0.4 0.4 0.4 1"
    ET.SubElement(scene, "background").text = "0.7 0.7 0.7 1"
    light = ET.SubElement(world, "light", type="directional", name="ceiling")
    ET.SubElement(light, "cast_shadows").text = "true"
    ET.SubElement(light, "pose").text = "0.6 0 2.6 0 0 0"
    ET.SubElement(light, "diffuse").text = "0.8 0.8 0.8 1"
    ET.SubElement(light, "specular").text = "0.2 0.2 0.2 1"
    ET.SubElement(light, "direction").text = "-0.2 0.1 -0.9"
    world.append(_ground())
    for body in bodies:
        world.append(_model(body, textures))
    ET.indent(sdf)
    return '<?xml version="1.0"?>\n' + ET.tostring(sdf, encoding="unicode") + "\n"


def _text(parent: ET.Element, tag: str, value: str) -> ET.Element:
    el = ET.SubElement(parent, tag)
    el.text = value
    return el


def _fmt(values: Iterable[float]) -> str:
    return " ".join(f"{v:.6g}" for v in values)


def _ground() -> ET.Element:
    # base_link is the world origin here as in MuJoCo; the robot is spawned 0.05 m up (base_footprint).
    model = ET.Element("model", name="ground_plane")
    _text(model, "static", "true")
    _text(model, "pose", _fmt((0, 0, FLOOR_Z, 0, 0, 0)))
    link = ET.SubElement(model, "link", name="link")
    for kind in ("collision", "visual"):
        el = ET.SubElement(link, kind, name=kind)
        plane = ET.SubElement(ET.SubElement(el, "geometry"), "plane")
        _text(plane, "normal", "0 0 1")
        _text(plane, "size", "10 10")
        if kind == "visual":
            material = ET.SubElement(el, "material")
            _text(material, "diffuse", "0.6 0.6 0.58 1")
    return model


def _geometry(parent: ET.Element, g: SceneGeom) -> None:
    geometry = ET.SubElement(parent, "geometry")
    sx, sy, sz = g.size
    if g.shape == "box":
        _text(ET.SubElement(geometry, "box"), "size", _fmt(g.size))
    elif g.shape == "cylinder":
        cyl = ET.SubElement(geometry, "cylinder")
        _text(cyl, "radius", f"{sx / 2.0:.6g}")
        _text(cyl, "length", f"{sz:.6g}")
    elif g.shape == "capsule":  # SDF 1.9: the length is the cylinder's, between the caps' centres
        cap = ET.SubElement(geometry, "capsule")
        _text(cap, "radius", f"{sx / 2.0:.6g}")
        _text(cap, "length", f"{sz - sx:.6g}")
    elif math.isclose(sx, sy) and math.isclose(sx, sz):
        _text(ET.SubElement(geometry, "sphere"), "radius", f"{sx / 2.0:.6g}")
    else:
        _text(ET.SubElement(geometry, "ellipsoid"), "radii", _fmt((sx / 2.0, sy / 2.0, sz / 2.0)))


def _model(body: SceneBody, textures: dict[int, Path]) -> ET.Element:
    model = ET.Element("model", name=body.name)
    _text(model, "static", "false" if body.free else "true")
    _text(model, "pose", _fmt((*body.pos, 0, 0, 0)))
    link = ET.SubElement(model, "link", name="link")
    if body.free:
        inertial = ET.SubElement(link, "inertial")
        _text(inertial, "mass", f"{body.mass_kg:.6g}")
        inertia = ET.SubElement(inertial, "inertia")
        i = body.mass_kg * 0.07 ** 2 / 12.0  # a 70 mm rod about its middle; the pipette is light and long
        for tag, value in (("ixx", i), ("iyy", i), ("izz", i / 20.0), ("ixy", 0.0), ("ixz", 0.0), ("iyz", 0.0)):
            _text(inertia, tag, f"{value:.6g}")
    for i, g in enumerate(body.geoms):
        pose = _fmt((*g.pos, *rpy_of(g.quat)))
        name = g.name or f"geom_{i}"
        if g.name != "liquid":
            collision = ET.SubElement(link, "collision", name=f"{name}_collision")
            _text(collision, "pose", pose)
            _geometry(collision, g)
        visual = ET.SubElement(link, "visual", name=f"{name}_visual")
        _text(visual, "pose", pose)
        _geometry(visual, g)
        material = ET.SubElement(visual, "material")
        rgba = _fmt(g.rgba)
        _text(material, "ambient", rgba)
        _text(material, "diffuse", rgba)
        if g.rgba[3] < 1.0:
            _text(visual, "transparency", f"{1.0 - g.rgba[3]:.3g}")
    if body.tag is not None and body.tag.marker_id in textures:
        side = body.tag.side_m * 1.5
        visual = ET.SubElement(link, "visual", name="tag")
        _text(visual, "pose", _fmt((*body.tag.pos, 0, body.tag.tilt_rad, 0)))  # pitch: a flag turned up
        _text(ET.SubElement(ET.SubElement(visual, "geometry"), "box"), "size", _fmt((0.001, side, side)))
        material = ET.SubElement(visual, "material")
        _text(material, "diffuse", "1 1 1 1")
        metal = ET.SubElement(ET.SubElement(material, "pbr"), "metal")
        path = Path(textures[body.tag.marker_id])
        _text(metal, "albedo_map", str(path if not path.is_absolute() else path.resolve()))
        _text(metal, "metalness", "0")
        _text(metal, "roughness", "0.8")
    return model


def main(argv: list[str] | None = None) -> int:
    """Write the world of a scenario's layout: ``python -m agentchemist.sim.sdf_world [--scenario hcl_naoh]
    [--out worlds/lab.sdf]`` (tag textures go to textures/ beside it)."""
    from agentchemist.paths import config_dir
    from agentchemist.sim.lab import LabTwin
    from agentchemist.sim.scenario import load_scenario
    from agentchemist.sim.scene_model import twin_scene

    parser = argparse.ArgumentParser(description="Write the Gazebo lab world of a scenario's layout")
    parser.add_argument("--scenario", default="hcl_naoh", help="scenario name (config/scenarios/<name>.yaml)")
    parser.add_argument("--out", default=str(config_dir().parent / "worlds" / "lab.sdf"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    bodies = twin_scene(LabTwin(load_scenario(config_dir() / "scenarios" / f"{args.scenario}.yaml")))
    out.write_text(build_sdf(bodies, out.parent / "textures", relative_to=out.parent))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
