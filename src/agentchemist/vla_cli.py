"""`agentchemist policy ...`: demonstrations and training of the VLA action policy.

    agentchemist policy record --out DIR [--episodes N] [--seed S]     twin demonstrations (scripted expert)
        [--subtasks a,b,c] [--instruction SUBTASK=TEXT ...]
    agentchemist policy train --dataset DIR --out DIR [--config tiny|paper|FILE.json] [--steps N] [--resume]
        [--augment] [--val-fraction F] [--log-every N]
    agentchemist policy eval --checkpoint DIR --out DIR [--episodes N] [--seed S] [--subtasks a,b]
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
    t.add_argument("--augment", action="store_true", help="random image shifts and colour jitter while training")
    t.add_argument("--val-fraction", type=float, default=0.1, help="share of the episodes held out for validation")
    t.add_argument("--log-every", type=int, default=50, help="steps between lines of OUT/train_log.jsonl")
    e = sub.add_parser("eval", help="score a checkpoint over randomised twin episodes per subtask")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--out", required=True, help="directory for eval.json and failures/")
    e.add_argument("--episodes", type=int, default=100, help="randomised episodes per subtask")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--subtasks", default="", help="comma-separated (default grasp_pipette,position_over_beaker,"
                   "return_pipette)")
    e.add_argument("--max-duration", type=float, default=20.0, help="s of twin time per episode before it fails")
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
        if args.command == "eval":
            return _eval(args, console)
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
            device=args.device, threads=args.threads, augment=args.augment, val_fraction=args.val_fraction,
            log_every=args.log_every), resume=args.resume)
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


def _eval(args, console: Console) -> int:
    from agentchemist.policy.vla.card import write_card
    from agentchemist.sim.vla_eval import SUBTASKS, evaluate  # the twin: a tool, not robot code
    subtasks = tuple(x for x in args.subtasks.split(",") if x) or SUBTASKS
    console.print(f"evaluating {escape(args.checkpoint)}: {args.episodes} randomised twin episode(s) of "
                  f"{', '.join(subtasks)} (minutes) ...")
    result = evaluate(args.checkpoint, args.episodes, args.seed, subtasks, args.out, args.max_duration)
    out = Path(args.out) / "eval.json"
    out.write_text(json.dumps(result, indent=2))
    write_card(args.checkpoint, evaluation=result)
    for name, r in result["subtasks"].items():
        lo, hi = r["wilson95"]
        console.print(f"{name}: {r['successes']}/{r['episodes']} ({r['rate']:.0%}, Wilson 95 % {lo:.0%}..{hi:.0%})")
    console.print(f"result in {escape(str(out))}; policy card in {escape(args.checkpoint)}")
    return 0
