"""A full disk under a running experiment (issue 38): the runs folder on a 2 MB tmpfs, filled while the run
records. The recorder ends the run with one named halt (disk_full, one line), the supervisor aborts on it,
and no callback waits on the store for long (a 2 MB disk used to wedge the graph in 30 s blocking submits).

Needs a tmpfs mount (root in a container); skipped with the reason where mounting is not allowed."""
import errno
import subprocess
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from agentchemist_interfaces.msg import ExperimentPlan  # noqa: E402
from agentchemist_ros.common.timeconv import node_now, to_msg  # noqa: E402
from agentchemist_ros.recorder_node import RecorderNode  # noqa: E402
from agentchemist_ros.tools.graph import ensure_init  # noqa: E402
from agentchemist_ros.vision_supervisor_node import VisionSupervisorNode  # noqa: E402
from tests.factories import planned  # noqa: E402
from tests.graph.harness import spinning, wait_for  # noqa: E402
from tests.graph.test_wire_hijack import SCENARIO, Injector, reading  # noqa: E402


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 2 MB tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk):
    """Write a filler file until the disk refuses more."""
    with open(disk / "filler", "wb") as fh:
        try:
            while True:
                fh.write(bytes(64 * 1024))
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_full_disk_ends_the_run_with_disk_full_and_no_wedge(small_disk):
    ensure_init()
    runs = small_disk / "runs"
    params = [Parameter("runs_dir", value=str(runs))]
    supervisor = VisionSupervisorNode(parameter_overrides=[*params, Parameter("require_scene_check", value=False),
                                                           Parameter("agent_wait_s", value=120.0)])
    recorder = RecorderNode(parameter_overrides=params)
    peer = Injector()
    plan = planned(SCENARIO)
    with spinning((supervisor, recorder, peer), threads=4):
        assert wait_for(lambda: peer.plan_pub.get_subscription_count() >= 2, 10.0)
        peer.plan_pub.publish(ExperimentPlan(experiment_id=plan.experiment_id, plan_json=plan.model_dump_json(),
                                             stamp=to_msg(node_now(peer))))
        assert wait_for(lambda: supervisor.ex is not None and recorder.recording is not None, 10.0)
        time.sleep(1.0)
        fill(small_disk)
        start = time.monotonic()
        while time.monotonic() - start < 20.0 and not [a for a in peer.anomalies if a.severity == "halt"]:
            for _ in range(20):
                peer.ph_pub.publish(reading("ph_meter", node_now(peer)))
            time.sleep(0.05)
        assert wait_for(lambda: [a for a in peer.seen("disk_full", "recorder") if a.severity == "halt"], 10.0)
        assert wait_for(lambda: any(s.state == "aborted" for s in peer.states), 10.0)
        took = time.monotonic() - start
    for node in (supervisor, recorder, peer):
        node.destroy_node()
    halts = [a for a in peer.seen("disk_full", "recorder") if a.severity == "halt"]
    assert len(halts) == 1  # once, not per record (the store's own disk_full warning comes before it)
    assert "\n" not in halts[0].description and plan.experiment_id in halts[0].description
    assert not peer.seen("node_error")
    assert took < 20.0
