"""Issue 11, scaled down: experiments back to back in one graph process (the long run's `repeat`, on
fresh samples) must not make the process grow with each experiment.

hcl_short five times in one scenario_runner worker with memory checkpoints after each experiment
(`--trace-memory 0`: no tracemalloc, so the run keeps its normal speed). From the third experiment on,
every cache is warm and every experiment's leftovers should be gone: the live Python blocks and the
objects of any one type may not grow with the experiments. Before the fixes, each 105-drop experiment
left about 3000 blocks (a Drop, an audio event record with its parameter arrays, ... per drop in the
twin) and the report's 60 MB peak inside the graph.

To see which node holds what, run the worker with tracemalloc (several times slower):
    python -m agentchemist_ros.tools.scenario_runner --worker --scenario S.yaml --seed 1 --runs DIR \\
        --out DIR/run_record.json --trace-memory 25     # -> DIR/memory_trace.json, growth by node
"""
import json

import pytest
import yaml

pytest.importorskip("rclpy")

from agentchemist.sim.scenario import read_scenario_yaml  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.graph.harness import run_worker  # noqa: E402

EXPERIMENTS = 5
MAX_BLOCKS_PER_EXPERIMENT = 1500  # after the fixes: about 300 (a drop's audio label, rclpy's goal results)
MAX_OBJECTS_OF_A_TYPE_PER_EXPERIMENT = 30  # rclpy keeps a few goal results until they expire
MAX_RSS_GROWTH_MB = 15.0


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_back_to_back_experiments_do_not_grow_the_process(tmp_path):
    data = read_scenario_yaml(REPO / "tests" / "data" / "scenarios" / "hcl_short.yaml")
    data["name"], data["repeat"] = "hcl_short_repeat", EXPERIMENTS
    scenario = tmp_path / "hcl_short_repeat.yaml"
    scenario.write_text(yaml.safe_dump(data))
    record = run_worker(scenario, tmp_path, "--trace-memory", "0", worker_timeout_s=1200, timeout_s=1500)
    assert record["success"] and len(record["memory_per_experiment_mb"]) == EXPERIMENTS, record["message"]
    trace = json.loads((tmp_path / "memory_trace.json").read_text())
    checkpoints = trace["checkpoints"]  # graph up, then after each experiment
    assert [c["label"] for c in checkpoints][-1] == f"after experiment {EXPERIMENTS}"

    warm = checkpoints[2:]  # from the end of the second experiment on
    blocks = [c["heap"]["python_blocks"] for c in warm]
    per_experiment = (blocks[-1] - blocks[0]) / (len(blocks) - 1)
    steps = trace["growth"][2:]
    assert per_experiment < MAX_BLOCKS_PER_EXPERIMENT, (per_experiment, [s["top_types"] for s in steps])

    types: dict[str, int] = {}
    for step in steps:
        for name, n in step["top_types"].items():
            types[name] = types.get(name, 0) + n
    growing = {name: n / len(steps) for name, n in types.items()
               if n / len(steps) >= MAX_OBJECTS_OF_A_TYPE_PER_EXPERIMENT}
    assert not growing, f"objects of these types grow with each experiment: {growing}"

    rss = [c["rss_mb"] for c in warm]
    assert rss[-1] - rss[0] < MAX_RSS_GROWTH_MB, rss
