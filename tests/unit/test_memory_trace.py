"""Attribution of the long-run memory checkpoints (agentchemist_ros.common.memory_trace): which node's
code an allocation's stack leads back to, and what a checkpoint of this process holds."""
import tracemalloc

import pytest

memory_trace = pytest.importorskip("agentchemist_ros.common.memory_trace")

ROS = "/ws/install/lib/python3.11/site-packages/agentchemist_ros/"
CORE = "/repo/src/agentchemist/"
LIB = "/venv/lib/python3.11/site-packages/"


def test_the_node_nearest_to_the_allocation_owns_it():
    # core code called from a node: the node (the innermost file of ours says where)
    assert memory_trace.owner_of([CORE + "perception/audio/context.py", ROS + "audio_supervisor_node.py",
                                  LIB + "rclpy/executors.py"]) == (
        "audio_supervisor", "agentchemist/perception/audio/context.py")
    # a message the executor built for a node's callback: still that node
    assert memory_trace.owner_of([LIB + "rclpy/executors.py", ROS + "recorder_node.py"])[0] == "recorder"
    # the twin: its node and its package
    assert memory_trace.owner_of([CORE + "sim/audio.py", CORE + "sim/lab.py", ROS + "lab_sim_node.py"])[0] == "twin"
    assert memory_trace.owner_of([CORE + "sim/pipette.py"])[0] == "twin"
    # core code on no node's stack (a store's writer thread), the harness, and the rest
    assert memory_trace.owner_of([CORE + "record/writer.py", "/usr/lib/python3.11/threading.py"])[0] == "core:record"
    assert memory_trace.owner_of([ROS + "common/waiting.py", ROS + "tools/scenario_runner.py"]) == (
        "harness", "agentchemist_ros/common/waiting.py")
    assert memory_trace.owner_of([LIB + "numpy/core/numeric.py"]) == ("other", "core/numeric.py")


def test_a_checkpoint_sees_what_a_node_holds_and_not_itself():
    tracemalloc.start(4)
    try:
        before = memory_trace.take("before")
        held = [bytearray(1000) for _ in range(200)]  # allocated here: this test file is "other"
        after = memory_trace.take("after")
    finally:
        tracemalloc.stop()
    grown = memory_trace.growth(before, after)
    assert grown["by_owner"].get("other", 0) >= 200 * 1000
    assert grown["by_owner"].get("harness", 0) == 0  # the first checkpoint's own records are not counted
    assert after.heap["python_blocks"] > 0 and after.objects["list"] > 0
    assert memory_trace.agents_bytes(after) == 0
    assert len(held) == 200
