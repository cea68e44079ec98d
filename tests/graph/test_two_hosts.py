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
from pathlib import Path

import pytest

from tests.conftest import REPO


# root makes a plain network namespace; anyone else one inside a user namespace where they are root
UNSHARE = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]


def _namespaces_work() -> bool:
    if not (shutil.which("unshare") and shutil.which("ip")):
        return False
    probe = subprocess.run([*UNSHARE, "sh", "-c", "ip link add a0 type veth peer name b0 && unshare -n true"],
                           capture_output=True, timeout=20)
    return probe.returncode == 0


@pytest.mark.slow  # three processes, DDS discovery across a link and a 5 s outage: ~10-20 s
def test_link_drop_between_robot_and_workstation_namespaces():
    pytest.importorskip("rclpy")
    if not _namespaces_work():
        pytest.skip("needs unshare -n, ip and veth links (private network namespaces)")
    peer = REPO / "tests" / "graph" / "two_hosts_peer.py"
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(100, 200)))
    run = subprocess.run([*UNSHARE, sys.executable, str(peer)], capture_output=True, text=True,
                         timeout=240, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["log"][0] == "reached_a", f"the arm was not driven across the link: {out} {run.stderr[-2000:]}"
    assert out["targets_during_drop_unchanged"] and out["arm_still_during_drop"] and out["arm_at_a_during_drop"]
    assert out["driver_alive"]
    after = json.loads(out["log"][1])
    assert after["states_after_link_up"], out
    assert out["log"][2] == "reached_b" and out["arm_at_b_after"]


@pytest.mark.slow  # a whole titration split across two namespaces, with a 5 s outage: ~80 s here
def test_titration_across_the_split_survives_a_5_s_link_drop(tmp_path):
    """Robot namespace: the twin, dispenser, recorder, audio supervisor, summarizer; workstation namespace:
    planner, vision supervisor, action policy and the RunExperiment client (tests/graph/two_hosts_graph_peer.py).
    The link goes down for 5 s while titrating. The titration completes, and every FusedRecord published on
    the robot side is in the recorder's database."""
    pytest.importorskip("rclpy")
    if not _namespaces_work():
        pytest.skip("needs unshare -n, ip and veth links (private network namespaces)")
    peer = REPO / "tests" / "graph" / "two_hosts_graph_peer.py"
    env = dict(os.environ, ROS_DOMAIN_ID=str(random.randint(100, 200)))
    run = subprocess.run([*UNSHARE, sys.executable, str(peer), str(tmp_path / "runs"), "--drop"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["started"], f"the workstation's planner was not reached across the link: {run.stderr[-2000:]}"
    assert "sim_s_during_drop" in out, "the link was never dropped (the titration did not start)"
    result = out["result"]
    assert result.get("success") and result.get("outcome") == "completed", out
    assert out["missing_records"] == 0 and out["stored_records"] >= out["published_records"] > 0
    assert out["fsm_last"] == ["accepted"]
    assert Path(result["report"]).exists()
