"""Demonstrations: the twin recorder writes a LeRobot v3 dataset that reads back; teleop streams align."""
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from agentchemist.policy.vla.dataset import ACTION, AUDIO, IMAGE_KEYS, STATE, Dataset, DatasetError, DatasetWriter
from agentchemist.policy.vla.teleop import TeleopEpisode
from agentchemist.sim.vla_demos import SUBTASKS, random_scene, record_twin_demos, twin_for


def test_twin_recorder_writes_a_v3_dataset_that_reads_back(tmp_path):
    root = record_twin_demos(tmp_path / "demos", 1, seed=3, subtasks=SUBTASKS[:2])
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_episodes"] == 2 and info["fps"] == 10
    assert (root / "data" / "chunk-000" / "file-000.parquet").is_file()
    assert (root / "meta" / "episodes" / "chunk-000" / "file-000.parquet").is_file()
    ds = Dataset(root)
    assert len(ds) == info["total_frames"] == sum(e["length"] for e in ds.episodes)
    assert set(ds.tasks.values()) == {"grasp pipette", "position over beaker"}
    first = ds.frame(0)
    assert first["observation.images.front"].shape == (120, 160, 3) and first[AUDIO].shape == (1600,)
    # the expert's action leads the measured state: in the grasp the right arm ends at the pipette pose
    ep0 = [ds.frame(i, images=False) for i in range(ds.episodes[0]["length"])]
    last_action = ep0[-1][ACTION]
    assert np.allclose(last_action[7:13], [0.35, 1.20, -1.05, 0.0, 0.55, 0.0], atol=1e-5)
    assert np.abs(ep0[-1][STATE][7:13] - last_action[7:13]).max() < 0.05
    stats = ds.stats
    assert len(stats[STATE]["mean"]) == 14 and stats[ACTION]["count"] == [len(ds)]
    tasks = pq.read_table(root / "meta" / "tasks.parquet").to_pylist()
    assert [t["task_index"] for t in tasks] == [0, 1]


def test_scenes_vary_between_episodes():
    rng = np.random.default_rng(0)
    a, b = random_scene(rng, 1), random_scene(rng, 2)
    ta, tb = twin_for(a), twin_for(b)
    pa = {i.id: i.position for i in ta.layout}
    pb = {i.id: i.position for i in tb.layout}
    assert pa["beaker_main"] != pb["beaker_main"]
    assert not np.array_equal(ta.render_camera("front", 0.0), tb.render_camera("front", 0.0))


def test_writer_refuses_bad_frames(tmp_path):
    w = DatasetWriter(tmp_path / "d", 10, {k: (8, 8, 3) for k in IMAGE_KEYS}, 4)
    frame = {**{k: np.zeros((8, 8, 3), np.uint8) for k in IMAGE_KEYS}, STATE: np.zeros(14), ACTION: np.zeros(14),
             AUDIO: np.zeros(4)}
    with pytest.raises(DatasetError, match="finite"):
        w.add_episode([{**frame, ACTION: np.full(14, np.nan)}], "t")
    with pytest.raises(DatasetError, match="expected"):
        w.add_episode([{**frame, IMAGE_KEYS[0]: np.zeros((9, 8, 3), np.uint8)}], "t")
    w.add_episode([frame, frame], "t")
    w.finalize()
    assert len(Dataset(tmp_path / "d")) == 2
    with pytest.raises(DatasetError, match="not a readable"):
        Dataset(tmp_path)


def test_teleop_streams_sample_at_the_control_rate(tmp_path):
    ep = TeleopEpisode(fps=10, sample_rate=100)
    for i in range(25):  # 50 Hz joints, 20 Hz cameras
        t = i * 0.02
        ep.add(STATE, t, np.full(14, t))
        ep.add(ACTION, t, np.full(14, t + 1))
        if i % 2 == 0:
            for k in IMAGE_KEYS:
                ep.add(k, t, np.full((8, 8, 3), i, np.uint8))
    ep.add_audio(0.0, np.arange(50, dtype=np.float32))
    frames = ep.frames()
    assert len(frames) == 5
    assert np.allclose(frames[2][STATE], 0.2) and np.allclose(frames[2][ACTION], 1.2)
    assert np.array_equal(frames[2][AUDIO], np.arange(10, 20))
    with pytest.raises(DatasetError, match="back in time"):
        ep.add(STATE, 0.0, np.zeros(14))
    w = DatasetWriter(tmp_path / "t", 10, {k: (8, 8, 3) for k in IMAGE_KEYS}, 10, source="teleop")
    w.add_episode(frames, "grasp pipette")
    w.finalize()
    assert Dataset(tmp_path / "t").episodes[0]["source"] == "teleop"


def _tiny_dataset(root, tasks=("grasp pipette", "draw", "grasp pipette")):
    w = DatasetWriter(root, 10, {k: (8, 8, 3) for k in IMAGE_KEYS}, 4)
    rng = np.random.default_rng(0)
    for n, task in zip((3, 2, 4), tasks):
        w.add_episode([{**{k: rng.integers(0, 255, (8, 8, 3), dtype=np.uint8) for k in IMAGE_KEYS},
                        STATE: rng.normal(size=14), ACTION: rng.normal(size=14), AUDIO: rng.normal(size=4) * 0.1}
                       for _ in range(n)], task)
    return w.finalize()


def test_layout_follows_lerobots_v3_reader(tmp_path):
    """Issue 42, what LeRobot 0.4's reader and dataset tools need (facts from lerobot's datasets/io_utils.py,
    dataset_tools.py, aggregate.py): the tasks table is indexed by the task string (pandas metadata), so
    tasks.iloc[task_index].name is the instruction, not "0"; meta/episodes/* has the bookkeeping columns
    delete_episodes / aggregate_datasets read (meta/episodes/chunk_index and file_index, per-episode
    stats/<feature>/<stat>); image stats are channel-first (3, 1, 1)."""
    root = _tiny_dataset(tmp_path / "d")
    tasks = pq.read_table(root / "meta" / "tasks.parquet")
    pandas_meta = json.loads(tasks.schema.metadata[b"pandas"])
    assert pandas_meta["index_columns"] == ["task"]
    assert tasks.column("task").to_pylist() == ["grasp pipette", "draw"]
    assert tasks.column("task_index").to_pylist() == [0, 1]
    eps = pq.read_table(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pylist()
    assert [e["tasks"] for e in eps] == [["grasp pipette"], ["draw"], ["grasp pipette"]]
    for e in eps:
        for col in ("meta/episodes/chunk_index", "meta/episodes/file_index", "data/chunk_index", "data/file_index",
                    "dataset_from_index", "dataset_to_index", "length", "episode_index"):
            assert col in e, col
        assert e["dataset_to_index"] - e["dataset_from_index"] == e["length"]
        assert np.asarray(e[f"stats/{STATE}/mean"]).shape == (14,)
        assert e[f"stats/{STATE}/count"] == [e["length"]]
        assert np.asarray(e[f"stats/{IMAGE_KEYS[0]}/mean"]).shape == (3, 1, 1)
        assert e["stats/task_index/min"] == [0 if e["tasks"] == ["grasp pipette"] else 1]
    data = pq.read_table(root / "data" / "chunk-000" / "file-000.parquet").to_pylist()
    assert [r["task_index"] for r in data] == [0, 0, 0, 1, 1, 0, 0, 0, 0]
    stats = json.loads((root / "meta" / "stats.json").read_text())
    for key in IMAGE_KEYS:
        for stat in ("mean", "std", "min", "max"):
            assert np.asarray(stats[key][stat]).shape == (3, 1, 1)
    assert np.asarray(stats[STATE]["mean"]).shape == (14,)
    ds = Dataset(root)
    assert [ds.frame(i, images=False)["task"] for i in (0, 3, 5)] == ["grasp pipette", "draw", "grasp pipette"]
