"""`agentchemist policy ...`: demonstrations and training of the VLA action policy.

    agentchemist policy record --out DIR [--episodes N] [--seed S]     twin demonstrations (scripted expert)
        [--subtasks a,b,c] [--instruction SUBTASK=TEXT ...]
    agentchemist policy train --dataset DIR --out DIR [--config tiny|paper|FILE.json] [--steps N] [--resume]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="agentchemist policy", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="record demonstrations in the twin (LeRobot v3 layout)")
    r.add_argument("--out", required=True)
    r.add_argument("--episodes", type=int, default=10, help="episodes per subtask")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--subtasks", default="", help="comma-separated, in the order they follow each other "
                   "(default grasp_pipette,position_over_beaker,return_pipette; a titration's: "
                   "grasp_pipette,draw_titrant,position_over_beaker)")
    r.add_argument("--instruction", action="append", default=[], metavar="SUBTASK=TEXT",
                   help="record SUBTASK under TEXT (the instruction a plan sends, e.g. "
                        "'grasp_pipette=grasp pipette (location=beaker_main)'); repeatable")
    t = sub.add_parser("train", help="train the VLA policy on a demonstration dataset")
    t.add_argument("--dataset", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--config", default="tiny", help="tiny | paper | a config.json")
    t.add_argument("--steps", type=int, default=2000)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--save-every", type=int, default=500)
    t.add_argument("--device", default="auto")
    t.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    t.add_argument("--resume", action="store_true", help="continue from OUT/checkpoints/last")
    args = parser.parse_args(argv)
    console = Console()
    try:
        if args.command == "record":
            from agentchemist.sim.vla_demos import record_twin_demos  # the twin: a tool, not robot code
            from agentchemist.sim.vla_demos import SUBTASKS
            subtasks = tuple(s for s in args.subtasks.split(",") if s) or SUBTASKS
            texts = dict(_pair(i) for i in args.instruction)
            console.print(f"recording {args.episodes} episode(s) of {', '.join(subtasks)} in the twin "
                          f"into {escape(args.out)} (the twin renders every frame: minutes) ...")
            path = record_twin_demos(args.out, args.episodes, seed=args.seed, subtasks=subtasks, instructions=texts)
            console.print(f"demonstrations written to {escape(str(path))}")
            return 0
        from agentchemist.policy.vla.configuration_vla import VLAConfig
        from agentchemist.policy.vla.train import TrainOptions, train
        config = args.config
        console.print(f"training the VLA policy ({escape(args.config)}, {args.steps} steps) on "
                      f"{escape(args.dataset)} into {escape(args.out)}: loading torch and the encoders first, "
                      f"a checkpoint every {args.save_every} steps ...")
        if config.endswith(".json"):
            config = VLAConfig.from_dict(json.loads(Path(config).read_text()))
        summary = train(args.dataset, args.out, config, TrainOptions(
            steps=args.steps, batch_size=args.batch_size, lr=args.lr, save_every=args.save_every,
            device=args.device, threads=args.threads), resume=args.resume)
        console.print_json(json.dumps(summary))
        return 0
    except (ValueError, OSError, RuntimeError) as exc:
        Console(stderr=True).print(f"[red]error:[/red] {escape(str(exc))}")
        return 2


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise ValueError(f"--instruction wants SUBTASK=TEXT, got {text!r}")
    return name.strip(), value.strip()
