"""The robot / workstation split over a real link: two network namespaces joined by a veth pair, Fast DDS
discovery by explicit peer list (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST + ROS_STATIC_PEERS, as
docker/compose.yaml), the piper_driver node and the simulated arm on the robot side, a probe playing the
topic-based hardware on the workstation side (tests/graph/two_hosts_peer.py).

The link is dropped for 5 s with the arm at its first target while the workstation keeps commanding a
second one: the arm holds (its targets unchanged, joints still), the driver keeps running; when the
link returns, joint states flow again without restarting anything and the arm follows.
Not covered here (see README): a titration across the split and the recorder during a drop."""
import json
import os
import random
import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO


def _namespaces_work() -> bool:
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link add a0 type veth peer name b0"],
                           capture_output=True, timeout=20)
    return probe.returncode == 0


@pytest.mark.slow  # three processes, DDS discovery across a link and a 5 s outage: ~10-20 s
def test_link_drop_between_robot_and_workstation_namespaces():
    pytest.importorskip("rclpy")
    if not _namespaces_work():
        pytest.skip("needs unshare -n, ip and veth links (private network namespaces)")
    peer = REPO / "tests" / "graph" / "two_hosts_peer.py"
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(100, 200)))
    run = subprocess.run(["unshare", "-n", sys.executable, str(peer)], capture_output=True, text=True,
                         timeout=240, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["log"][0] == "reached_a", f"the arm was not driven across the link: {out} {run.stderr[-2000:]}"
    assert out["targets_during_drop_unchanged"] and out["arm_still_during_drop"] and out["arm_at_a_during_drop"]
    assert out["driver_alive"]
    after = json.loads(out["log"][1])
    assert after["states_after_link_up"], out
    assert out["log"][2] == "reached_b" and out["arm_at_b_after"]
