"""Cost of the vision pipeline per camera frame at 640x480, against the 33.3 ms a 30 fps stream allows.

Frames are the twin's front camera rendered at 640x480 (the robot cameras' colour stream in
robot.launch.py) through a titration; each goes through what the vision supervisor does with a front
frame: sensor_msgs/Image -> numpy (the numpy conversion used here; cv_bridge on the robot), the liquid's
colour (BeakerColourTracker), the bench watch's ArUco tags (detect_markers) and the dissolution watch.
CPU time on one core (process_time, OpenCV limited to one thread). The twin's renderer is not counted.

Run:  . scripts/env.sh && python bench/vision_pipeline.py [--frames 300] [--out bench/results/vision_pipeline.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from agentchemist.perception.colour import BeakerColourTracker, ColourError  # noqa: E402
from agentchemist.perception.dissolution import DissolutionError, DissolutionWatch  # noqa: E402
from agentchemist.perception.tags import detect_markers  # noqa: E402
from agentchemist.sim.lab import LabTwin  # noqa: E402
from agentchemist.sim.scenario import load_scenario  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from bench.provenance import commit  # noqa: E402  (the repository on the path: run as a script)

BUDGET_MS = 1000.0 / 30.0


def frames(n: int, scenario: Path) -> list[np.ndarray]:
    scn = load_scenario(scenario)
    scn = scn.model_copy(update={"cameras": scn.cameras.model_copy(update={"width": 640, "height": 480})})
    twin = LabTwin(scn)
    return [twin.render_camera("front", 1.0 + i / 30.0) for i in range(n)]


def timed(fn, *args):
    t = time.process_time()
    try:
        fn(*args)
    except (ColourError, DissolutionError):
        pass          # an unreadable frame costs what it costs
    return (time.process_time() - t) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--scenario", type=Path, default=REPO / "config" / "scenarios" / "hcl_naoh.yaml")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "vision_pipeline.json")
    args = ap.parse_args()
    cv2.setNumThreads(1)
    images = frames(args.frames, args.scenario)
    try:
        from agentchemist_ros.common import images as ros_images
    except ImportError:
        ros_images = None
    msgs = [ros_images.to_msg(img, "rgb8") for img in images] if ros_images else []
    tracker, watch = BeakerColourTracker(), DissolutionWatch()
    stages = {"decode": [], "colour": [], "tags": [], "dissolution": []}
    for i, img in enumerate(images):
        if msgs:
            stages["decode"].append(timed(ros_images.to_rgb, msgs[i]))
        stages["colour"].append(timed(tracker.measure, img, i / 30.0))
        stages["tags"].append(timed(detect_markers, img))
        stages["dissolution"].append(timed(watch.update, i / 30.0, img))
    per_frame = np.sum([np.array(v) for v in stages.values() if v], axis=0)
    summary = {k: {"mean_ms": round(float(np.mean(v)), 3), "p95_ms": round(float(np.percentile(v, 95)), 3)}
               for k, v in stages.items() if v}
    result = {
        "benchmark": "vision_pipeline",
        "commit": commit(),
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
                    "opencv": cv2.__version__},
        "setup": {"frames": len(images), "resolution": "640x480", "fps": 30, "one_core": True,
                  "decode": "numpy conversion (cv_bridge not installed here)" if msgs else "skipped: no ROS env"},
        "stages": summary,
        "per_frame_ms": {"mean": round(float(per_frame.mean()), 3), "p95": round(float(np.percentile(per_frame, 95)), 3),
                         "max": round(float(per_frame.max()), 3)},
        "budget_ms_at_30fps": round(BUDGET_MS, 2),
        "share_of_one_core_at_30fps": round(float(per_frame.mean()) / BUDGET_MS, 3),
    }
    print(json.dumps({k: result[k] for k in ("stages", "per_frame_ms", "share_of_one_core_at_30fps")}, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
