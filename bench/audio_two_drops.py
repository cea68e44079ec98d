"""Two drops in one ring: how often the streaming detector hears two droplets when two drops land 20-100 ms
apart, and that single drops (with distractors) are heard as before, on twin audio with ground truth.

The case of issue 24's fault_extra_drop seeds 16 and 18: a leaked drop landing 29-47 ms after a squeezed
one. Compares the detector with its reonset split (DetectorConfig.reonset_db, the default) and without it.

Run:  .venv/bin/python bench/audio_two_drops.py [--pair-seeds 20] [--single-seeds 30]
      [--out bench/results/audio_two_drops.json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

from agentchemist.perception.audio import DetectorConfig, StreamingDetector
from agentchemist.perception.audio.evaluation import score_droplets
from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth, drop_train

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
from bench.provenance import commit  # noqa: E402  (the repository on the path: run as a script)
SR = 48000
CHUNK = 4800  # 0.1 s, as the twin publishes


def detect(events: list[AudioEventTruth], seed: int, snr_db: float, seconds: float, config: DetectorConfig) -> list:
    synth = ContactAudioSynth(ContactAudioConfig(seed=seed, snr_db=snr_db))
    for ev in events:
        synth.schedule(ev)
    det = StreamingDetector(config)
    out = []
    for i in range(0, int(seconds * SR), CHUNK):
        out += det.process(synth.render(i / SR, CHUNK), i / SR)
    return out + det.flush()


def pairs(seeds: int, config: DetectorConfig) -> dict:
    """Ten pairs per seed, the second drop 20-100 ms after the first; droplets heard per pair, by gap."""
    rng = np.random.default_rng(1)
    by_gap: dict[int, list[int]] = {}
    for seed in range(seeds):
        truth, gaps = [], []
        for k in range(10):
            t0, gap = 0.5 + 0.6 * k, float(rng.uniform(0.02, 0.1))
            truth += [AudioEventTruth(t0, "droplet"), AudioEventTruth(t0 + gap, "droplet")]
            gaps.append((t0, gap))
        events = detect(truth, seed, 20.0, 6.6, config)
        for t0, gap in gaps:
            heard = sum(1 for e in events if e.kind == "droplet" and t0 - 0.02 <= e.onset <= t0 + gap + 0.03)
            by_gap.setdefault(int(gap * 100) * 10, []).append(heard)
    counts = [n for v in by_gap.values() for n in v]
    return {"pairs": len(counts), "heard_as_two": sum(n == 2 for n in counts),
            "by_gap_ms": {f"{g}-{g + 10}": {"pairs": len(v), "heard_as_two": sum(n == 2 for n in v)}
                          for g, v in sorted(by_gap.items())}}


def singles(seeds: int, snr_db: float, config: DetectorConfig) -> dict:
    """30 drops per seed with distractors (30 %), as the detector benchmark: droplet TP / FP / FN."""
    tp = fp = fn = 0
    for seed in range(seeds):
        truth = drop_train(30, seed=seed, distractor_rate=0.3)
        score = score_droplets(truth, detect(truth, seed, snr_db, truth[-1].time + 3.0, config))
        tp, fp, fn = tp + score.true_positives, fp + score.false_positives, fn + score.false_negatives
    return {"snr_db": snr_db, "drops": 30 * seeds, "true_positives": tp, "false_positives": fp, "false_negatives": fn}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pair-seeds", type=int, default=20)
    p.add_argument("--single-seeds", type=int, default=30)
    p.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "audio_two_drops.json")
    args = p.parse_args(argv)
    result = {"benchmark": "audio_two_drops",
              "commit": commit(),
              "machine": {"python": platform.python_version(), "processor": platform.machine(),
                          "load_1min": os.getloadavg()[0]}}
    for name, config in (("reonset", DetectorConfig()), ("no_reonset", DetectorConfig(reonset_db=0.0))):
        result[name] = {"pairs": pairs(args.pair_seeds, config),
                        "singles": [singles(args.single_seeds, snr, config) for snr in (12.0, 20.0, 30.0)]}
        print(name, json.dumps(result[name]["pairs"]["heard_as_two"]), json.dumps(result[name]["singles"]))
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
