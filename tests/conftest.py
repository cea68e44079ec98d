"""Test-wide setup: an isolated DDS domain per test session, headless plotting, repo paths."""
import os
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Concurrent test sessions on one machine must not hear each other's topics.
os.environ.setdefault("ROS_DOMAIN_ID", str(random.Random(os.getpid()).randint(1, 100)))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("AGENTCHEMIST_CONFIG_DIR", str(REPO / "config"))
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
