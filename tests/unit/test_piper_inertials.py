"""The arms weigh what AgileX's own Piper description says (issue 39, defect 5): 4.66 kg an arm with its
gripper (datasheet about 4.2 kg), not MuJoCo Menagerie's 1.32 kg; centres of mass where that description
puts them (link2's between joint2 and joint3, 0.2185 m out of 0.285); every inertia physical."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.unit.test_robot_files import URDF_DIR

ARM_LINKS = ("arm_base", "link1", "link2", "link3", "link4", "link5", "link6", "finger_a", "finger_b")
AGILEX_MASS_KG = {"arm_base": 1.02, "link1": 0.71, "link2": 1.16, "link3": 0.5, "link4": 0.38, "link5": 0.383,
                  "link6": 0.457, "finger_a": 0.025, "finger_b": 0.025}  # link6: their link6 + gripper_base


def inertials(side: str) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
    root = ET.parse(URDF_DIR / "agentchemist_aloha.urdf").getroot()
    out = {}
    for link in root.findall("link"):
        name = link.get("name")
        if name.startswith(f"{side}_") and name[len(side) + 1:] in ARM_LINKS:
            inertial = link.find("inertial")
            i = inertial.find("inertia").attrib
            tensor = np.array([[float(i["ixx"]), float(i["ixy"]), float(i["ixz"])],
                               [float(i["ixy"]), float(i["iyy"]), float(i["iyz"])],
                               [float(i["ixz"]), float(i["iyz"]), float(i["izz"])]])
            com = np.array([float(v) for v in inertial.find("origin").get("xyz").split()])
            out[name[len(side) + 1:]] = (float(inertial.find("mass").get("value")), com, tensor)
    return out


@pytest.mark.parametrize("side", ["left", "right"])
def test_each_arm_has_agilexs_masses_and_physical_inertias(side):
    links = inertials(side)
    assert set(links) == set(ARM_LINKS)
    assert {k: m for k, (m, _, _) in links.items()} == pytest.approx(AGILEX_MASS_KG)
    assert sum(m for m, _, _ in links.values()) == pytest.approx(4.66, abs=0.01)
    assert links["link2"][1][0] == pytest.approx(0.21852)          # along the upper arm, towards joint3
    for name, (mass, com, tensor) in links.items():
        principal = np.linalg.eigvalsh(tensor)
        assert principal.min() > 0 and 2 * principal.max() <= principal.sum() + 1e-12, name
        # about the centre of mass: no link's radius of gyration exceeds its reach (0.3 m)
        assert np.sqrt(principal.max() / mass) < 0.3, name
