"""Demonstrations in the LeRobot dataset v3 layout, written and read with pyarrow.

Why not the ``lerobot`` package itself: every lerobot release on PyPI (0.1.0 .. 0.4.4) pins
huggingface-hub < 0.36 (or torch < 2.8, numba < 0.60), and our transformers 5.23 needs huggingface-hub 2.x
(requirements/constraints.txt), so pip cannot install it beside our pins. The files here follow its v3.0
layout, so lerobot's reader can take them where it is installed:

    meta/info.json                                  codebase_version "v3.0", fps, features, path templates
    meta/stats.json                                 per-feature mean / std / min / max / count
    meta/tasks.parquet                              task (the subtask's instruction text), task_index
    meta/episodes/chunk-000/file-000.parquet        one row per episode: length, tasks, where its rows are
    data/chunk-000/file-000.parquet                 one row per frame, many episodes per file

What LeRobot's own reader and dataset tools need (facts from lerobot's datasets/io_utils.py,
dataset_tools.py and aggregate.py; issue 42 found each missing with lerobot 0.4.4): the tasks table is a
pandas frame *indexed by the task string* (a sample's ``task`` is ``tasks.iloc[task_index].name``; with the
string as a plain column it came back as "0", "1"), so tasks.parquet carries pandas' metadata naming
``task`` as the index; each row of meta/episodes/* has ``meta/episodes/chunk_index``/``file_index`` and the
episode's own statistics as ``stats/<feature>/<stat>`` columns (delete_episodes and aggregate_datasets
read and re-aggregate them); image statistics are channel-first, shape (3, 1, 1).

Images are ``dtype: image`` features (PNG bytes in a {bytes, path} struct, as Hugging Face datasets store
images) rather than mp4 videos: no video codec is needed to write or read them. Contact audio is our
extension (LeRobot v3 has no audio feature): ``observation.audio`` holds the microphone samples of each frame
period (float32 in [-1, 1]), so a training window is the concatenation of the frames before it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from agentchemist.workcell.robot import JOINT_NAMES

CODEBASE_VERSION = "v3.0"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
EPISODES_PATH = "meta/episodes/chunk-000/file-000.parquet"
CAMERAS = ("front", "left_wrist", "right_wrist")
IMAGE_KEYS = tuple(f"observation.images.{c}" for c in CAMERAS)
STATE, ACTION, AUDIO = "observation.state", "action", "observation.audio"
SCALARS = ("timestamp", "frame_index", "episode_index", "index", "task_index")


class DatasetError(ValueError):
    """A dataset directory that is not (or not a complete) LeRobot v3 dataset, or a bad frame."""


def _png(img: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2BGR))
    if not ok:
        raise DatasetError("PNG encoding failed")
    return buf.tobytes()


def decode_image(cell: dict) -> np.ndarray:
    """RGB uint8 (H, W, 3) from a stored image cell."""
    arr = cv2.imdecode(np.frombuffer(cell["bytes"], np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise DatasetError("an image cell does not decode as PNG")
    return cv2.cvtColor(arr, cv2.COLOR_BGR2RGB)


@dataclass
class _Running:
    """Streaming mean / std / min / max of one feature."""
    n: int = 0
    s: np.ndarray | None = None
    ss: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None

    def add(self, x: np.ndarray) -> None:  # x: (N, D)
        x = x.astype(np.float64)
        if self.s is None:
            self.s, self.ss = x.sum(0), (x * x).sum(0)
            self.lo, self.hi = x.min(0), x.max(0)
        else:
            self.s += x.sum(0)
            self.ss += (x * x).sum(0)
            self.lo, self.hi = np.minimum(self.lo, x.min(0)), np.maximum(self.hi, x.max(0))
        self.n += len(x)

    def result(self, shape: tuple[int, ...] | None = None) -> dict:
        """mean / std / min / max (reshaped to ``shape`` when given: (3, 1, 1) for images) and count."""
        mean = self.s / self.n
        std = np.sqrt(np.maximum(self.ss / self.n - mean * mean, 0.0))
        out = {"mean": mean, "std": std, "min": self.lo, "max": self.hi}
        return {**{k: (v if shape is None else v.reshape(shape)).tolist() for k, v in out.items()},
                "count": [self.n]}


def _stats_of(cols: dict, frames: list[dict]) -> dict[str, _Running]:
    """Running statistics of one episode's columns (images: per channel in [0, 1], from up to 8 frames)."""
    n = len(frames)
    out = {key: _Running() for key in (STATE, ACTION, *IMAGE_KEYS, AUDIO, *SCALARS)}
    for key in (STATE, ACTION):
        out[key].add(np.asarray(cols[key], np.float32))
    out[AUDIO].add(np.asarray(cols[AUDIO], np.float32).reshape(-1, 1))
    for key in SCALARS:
        out[key].add(np.asarray(cols[key], np.float64).reshape(-1, 1))
    for key in IMAGE_KEYS:  # per-channel, in [0, 1], as LeRobot's image stats
        out[key].add(np.stack([np.asarray(f[key]) for f in frames[:: max(1, n // 8)]]).reshape(-1, 3) / 255.0)
    return out


def _merge(into: dict[str, _Running], part: dict[str, _Running]) -> None:
    for key, r in part.items():
        m = into.setdefault(key, _Running())
        if m.s is None:
            m.n, m.s, m.ss, m.lo, m.hi = r.n, r.s.copy(), r.ss.copy(), r.lo.copy(), r.hi.copy()
        else:
            m.n, m.s, m.ss = m.n + r.n, m.s + r.s, m.ss + r.ss
            m.lo, m.hi = np.minimum(m.lo, r.lo), np.maximum(m.hi, r.hi)


def _stat_shape(key: str) -> tuple[int, ...] | None:
    return (3, 1, 1) if key in IMAGE_KEYS else None


def _tasks_table(tasks: dict[str, int]) -> pa.Table:
    """meta/tasks.parquet: task_index with the task string as the pandas index (pandas' own parquet
    metadata, which pandas.read_parquet turns back into the index; pandas itself is not needed to write)."""
    table = pa.table({"task_index": pa.array(list(tasks.values()), pa.int64()), "task": list(tasks)})
    meta = {"index_columns": ["task"], "column_indexes": [{"name": None, "field_name": None,
                                                             "pandas_type": "unicode", "numpy_type": "object",
                                                             "metadata": {"encoding": "UTF-8"}}],
            "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64",
                         "numpy_type": "int64", "metadata": None},
                        {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object",
                         "metadata": None}],
            "creator": {"library": "pyarrow", "version": pa.__version__}, "pandas_version": "2.2.3"}
    return table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()})


@dataclass
class DatasetWriter:
    """Appends episodes (lists of frames) to a v3 dataset at ``root`` (a new directory)."""
    root: Path
    fps: int
    image_shapes: dict[str, tuple[int, int, int]]
    audio_samples: int
    robot_type: str = "agentchemist_aloha_piper"
    source: str = "twin"
    tasks: dict[str, int] = field(default_factory=dict)
    episodes: list[dict] = field(default_factory=list)
    _writer: pq.ParquetWriter | None = None
    _frames: int = 0
    _stats: dict[str, _Running] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        if (self.root / "meta" / "info.json").exists():
            raise DatasetError(f"{self.root} already holds a dataset")
        missing = set(IMAGE_KEYS) - set(self.image_shapes)
        if missing:
            raise DatasetError(f"image shapes missing for {sorted(missing)}")

    def features(self) -> dict:
        names = {"motors": list(JOINT_NAMES)}
        feats = {k: {"dtype": "image", "shape": list(self.image_shapes[k]), "names": ["height", "width", "channel"]}
                 for k in IMAGE_KEYS}
        feats[STATE] = {"dtype": "float32", "shape": [len(JOINT_NAMES)], "names": names}
        feats[ACTION] = {"dtype": "float32", "shape": [len(JOINT_NAMES)], "names": names}
        feats[AUDIO] = {"dtype": "float32", "shape": [self.audio_samples], "names": ["samples"],
                        "info": {"sample_rate": self.audio_samples * self.fps, "channels": 1}}
        for k in ("timestamp",):
            feats[k] = {"dtype": "float32", "shape": [1], "names": None}
        for k in ("frame_index", "episode_index", "index", "task_index"):
            feats[k] = {"dtype": "int64", "shape": [1], "names": None}
        return feats

    def add_episode(self, frames: list[dict], task: str) -> int:
        """Write one episode; each frame has the three images, observation.state, action and
        observation.audio. Returns the episode index."""
        if not frames:
            raise DatasetError("an episode needs at least one frame")
        n_j = len(JOINT_NAMES)
        for i, f in enumerate(frames):
            for key in IMAGE_KEYS:
                if np.asarray(f[key]).shape != tuple(self.image_shapes[key]):
                    raise DatasetError(f"frame {i}: {key} is {np.asarray(f[key]).shape}, expected {self.image_shapes[key]}")
            for key, n in ((STATE, n_j), (ACTION, n_j), (AUDIO, self.audio_samples)):
                a = np.asarray(f[key], dtype=np.float32)
                if a.shape != (n,) or not np.isfinite(a).all():
                    raise DatasetError(f"frame {i}: {key} must be {n} finite values")
        ep = len(self.episodes)
        task_index = self.tasks.setdefault(task, len(self.tasks))
        start = self._frames
        cols = {key: [{"bytes": _png(f[key]), "path": None} for f in frames] for key in IMAGE_KEYS}
        for key in (STATE, ACTION, AUDIO):
            cols[key] = [np.asarray(f[key], np.float32).tolist() for f in frames]
        n = len(frames)
        cols["timestamp"] = [i / self.fps for i in range(n)]
        cols["frame_index"] = list(range(n))
        cols["episode_index"] = [ep] * n
        cols["index"] = list(range(start, start + n))
        cols["task_index"] = [task_index] * n
        table = pa.table(cols, schema=self._schema())
        if self._writer is None:
            path = self.root / DATA_PATH.format(chunk_index=0, file_index=0)
            path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(path, table.schema)
        self._writer.write_table(table)
        ep_stats = _stats_of(cols, frames)
        _merge(self._stats, ep_stats)
        row = {"episode_index": ep, "tasks": [task], "length": n, "data/chunk_index": 0, "data/file_index": 0,
               "dataset_from_index": start, "dataset_to_index": start + n, "meta/episodes/chunk_index": 0,
               "meta/episodes/file_index": 0, "source": self.source}
        for key, r in ep_stats.items():
            for stat, value in r.result(_stat_shape(key)).items():
                row[f"stats/{key}/{stat}"] = value
        self.episodes.append(row)
        self._frames += n
        return ep

    def _schema(self) -> pa.Schema:
        img = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        fields = [(k, img) for k in IMAGE_KEYS]
        fields += [(k, pa.list_(pa.float32())) for k in (STATE, ACTION, AUDIO)]
        fields += [("timestamp", pa.float32())] + [(k, pa.int64()) for k in
                                                   ("frame_index", "episode_index", "index", "task_index")]
        return pa.schema(fields)

    def finalize(self) -> Path:
        """Close the data file and write meta/: info, stats, tasks, episodes."""
        if self._writer is None:
            raise DatasetError("no episode was written")
        self._writer.close()
        self._writer = None
        meta = self.root / "meta"
        (meta / "episodes" / "chunk-000").mkdir(parents=True, exist_ok=True)
        pq.write_table(_tasks_table(self.tasks), meta / "tasks.parquet")
        pq.write_table(pa.Table.from_pylist(self.episodes), self.root / EPISODES_PATH)
        stats = {k: r.result(_stat_shape(k)) for k, r in self._stats.items()}
        (meta / "stats.json").write_text(json.dumps(stats, indent=1))
        info = {"codebase_version": CODEBASE_VERSION, "robot_type": self.robot_type,
                "total_episodes": len(self.episodes), "total_frames": self._frames, "total_tasks": len(self.tasks),
                "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": self.fps,
                "splits": {"train": f"0:{len(self.episodes)}"}, "data_path": DATA_PATH, "video_path": None,
                "features": self.features()}
        (meta / "info.json").write_text(json.dumps(info, indent=2))
        return self.root


class Dataset:
    """A v3 dataset read back: frames as dicts (images decoded), episodes, tasks and stats."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        try:
            self.info = json.loads((self.root / "meta" / "info.json").read_text())
            self.stats = json.loads((self.root / "meta" / "stats.json").read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise DatasetError(f"{self.root} is not a readable LeRobot v3 dataset: {exc}") from None
        if self.info.get("codebase_version") != CODEBASE_VERSION:
            raise DatasetError(f"{self.root}: codebase_version {self.info.get('codebase_version')!r}, expected v3.0")
        self.fps = int(self.info["fps"])
        self.episodes = pq.read_table(self.root / EPISODES_PATH).to_pylist()
        tasks = pq.read_table(self.root / "meta" / "tasks.parquet").to_pylist()
        self.tasks = {t["task_index"]: t["task"] for t in tasks}
        files = sorted((self.root / "data").rglob("*.parquet"))
        self.table = pa.concat_tables([pq.read_table(f) for f in files])
        if self.table.num_rows != self.info["total_frames"]:
            raise DatasetError(f"{self.root}: {self.table.num_rows} frames on disk, info.json says "
                               f"{self.info['total_frames']}")
        self._cols = {k: self.table.column(k).to_pylist() for k in self.table.column_names if k not in IMAGE_KEYS}

    def __len__(self) -> int:
        return self.table.num_rows

    def frame(self, i: int, images: bool = True) -> dict:
        out = {k: v[i] for k, v in self._cols.items()}
        for key in (STATE, ACTION, AUDIO):
            out[key] = np.asarray(out[key], np.float32)
        out["task"] = self.tasks[out["task_index"]]
        if images:
            for key in IMAGE_KEYS:
                out[key] = decode_image(self.table.column(key)[i].as_py())
        return out
