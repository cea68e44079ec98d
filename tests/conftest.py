"""Test-wide setup: an isolated DDS domain per test session, headless plotting, repo paths."""
import atexit
import os
import random
import shutil
import tempfile
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Concurrent test sessions on one machine must not hear each other's topics.
os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(1, 100)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("AGENTCHEMIST_CONFIG_DIR", str(REPO / "config"))
# Calibrations a test saves go to a private folder, and a developer's own calibration store is not read:
# every session starts from the shipped config/calibration/pipette.yaml.
os.environ["AGENTCHEMIST_CALIBRATION_DIR"] = tempfile.mkdtemp(prefix="agentchemist-test-calibration-")
atexit.register(shutil.rmtree, os.environ["AGENTCHEMIST_CALIBRATION_DIR"], True)
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import pytest  # noqa: E402

from tests import factories  # noqa: E402


# ---------------------------------------------------------------- shared plan fixtures (tests/factories.py)
@pytest.fixture(scope="module")
def ph_plan():
    """The rules planner's plan for the short HCl/NaOH scenario (tests/data/scenarios/hcl_short.yaml)."""
    return factories.planned(factories.HCL_SHORT)


@pytest.fixture(scope="module")
def ca_plan():
    """The rules planner's plan for the Ca/EDTA complexometric scenario (colour endpoint)."""
    return factories.planned(factories.CA_EDTA)


@pytest.fixture(scope="module")
def weighing_plan():
    """The rules planner's plan for the NaCl weighing scenario, on the weighing bench's scene."""
    return factories.planned(factories.NACL_WEIGHING, factories.WEIGHING_SCENE)

