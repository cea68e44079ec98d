"""`agentchemist bag`: record, inspect and play rosbag2 bags (sqlite3 and MCAP) without rosbag2.

    python -m agentchemist_ros.tools.bag_cli record [TOPIC|PATTERN|PRESET ...] -o OUT [--storage mcap|sqlite3]
                                              [--compression zstd] [--max-bag-size BYTES] [--use-sim-time]
    python -m agentchemist_ros.tools.bag_cli info BAG [--verbose] [--json]
    python -m agentchemist_ros.tools.bag_cli play BAG [--rate R | --fast] [--topics T ...] [--remap /a:=/b ...]
                                              [--start-offset S] [--until S] [--loop] [--clock HZ]

Presets: sensors, agents, all (see agentchemist.bag.presets). Exit status 0 on success, 2 on a bag or
option error (the message names the file and the problem), 3 on damage. `record` stops on SIGINT (Ctrl-C,
or `kill -INT` without a terminal) and SIGTERM, closes the bag, writes metadata.yaml and exits 0.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from agentchemist.bag import (BagError, BagOptionError, BagReader, PlaybackOptions, WriterOptions, format_info,
                              parse_remaps, select_topics)


def _size(n: int) -> str:
    return f"{n / 1e6:.2f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


# ---------------------------------------------------------------------- info
#: exit status of a command that found damage (2: it could not run at all)
DAMAGED = 3


def damaged(console: Console, problems, kept: str, shown=()) -> int:
    """Print the problems (but those already `shown`) and what was kept; the exit status (0: none)."""
    for problem in (p for p in problems if p not in shown):
        console.print(f"[yellow]problem:[/yellow] {escape(str(problem))}")
    if not problems:
        return 0
    console.print(f"[red]damaged:[/red] {len(problems)} problem(s); {kept}")
    return DAMAGED


def cmd_info(args, console: Console) -> int:
    with BagReader(args.bag) as reader:
        info = reader.info()
        readable, problems = reader.verify() if not args.no_verify else (info.count, list(info.problems))
    if args.json:
        print(json.dumps({
            "path": str(info.path), "storage": info.storage, "version": info.version, "messages": info.count,
            "start_ns": info.start_ns, "end_ns": info.end_ns, "duration_ns": info.duration_ns,
            "size_bytes": info.size_bytes, "files": [f.path.name for f in info.files],
            "compression": {"format": info.compression_format, "mode": info.compression_mode},
            "topics": [{"name": t.name, "type": t.msgtype, "count": t.count, "latched": t.latched,
                        "serialization_format": t.serialization_format} for t in info.topics],
            "verified": not args.no_verify, "readable_messages": readable,
            "problems": [str(p) for p in problems]}, indent=2))
        return DAMAGED if problems else 0
    print(format_info(info, verbose=args.verbose))
    if not args.no_verify:
        console.print(f"verified: {readable} messages read intact" + (f" of {info.count} listed" if
                                                                      info.from_metadata else ""))
    return damaged(console, problems, f"{readable} messages readable", shown=info.problems)


# ---------------------------------------------------------------------- record
def _record_table(recorder, started: float) -> Table:
    stats = recorder.stats()
    table = Table(title=f"recording to {recorder.output}", show_header=True)
    table.add_column("topic")
    table.add_column("messages", justify="right")
    for topic, count in sorted(stats.per_topic.items()):
        table.add_row(escape(topic), str(count))
    table.caption = (f"{stats.messages} messages, {_size(stats.bytes)}, file {stats.file_index} "
                     f"({_size(stats.file_bytes)}), {time.monotonic() - started:.0f} s; Ctrl-C stops")
    return table


def stop_on_signals(event: threading.Event) -> None:
    """SIGINT and SIGTERM set `event`, and the recording loop ends and closes the bag (metadata.yaml written).

    Our own handlers, not rclpy's nor Python's default: rclpy's only shuts its context down (a loop that
    sleeps never sees it), a shell starts a background job with SIGINT ignored (no KeyboardInterrupt ever
    comes), and SIGTERM (kill, docker stop, systemd, launch) would end the process without closing the bag."""
    def handler(signum, frame):
        event.set()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)


def cmd_record(args, console: Console) -> int:
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from agentchemist_ros.tools.bag.recorder import BagRecorder
    from agentchemist_ros.common.runner import make_executor

    items = list(args.topics) + (["all"] if args.all else [])
    selection = select_topics(items, exclude=args.exclude or ())
    output = Path(args.output or datetime.now().strftime("rosbag2_%Y_%m_%d-%H_%M_%S"))
    options = WriterOptions(storage=args.storage, max_bytes=args.max_bag_size, compression=args.compression,
                            strictly_increasing=args.use_sim_time, ros_distro=os.environ.get("ROS_DISTRO", "jazzy"))
    stop_requested = threading.Event()
    stop_on_signals(stop_requested)
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    recorder = BagRecorder(output, selection, options,
                           parameter_overrides=[Parameter("use_sim_time", value=bool(args.use_sim_time))])
    executor = make_executor()
    executor.add_node(recorder)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_once(0.1) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    console.print(f"recording {escape(selection.describe())} into {output} ({args.storage})")
    started = time.monotonic()
    def running():
        return not stop_requested.is_set() and (args.duration is None or time.monotonic() - started < args.duration)

    try:
        if args.no_progress:
            while running():
                time.sleep(0.1)
        else:
            with Live(_record_table(recorder, started), console=console, refresh_per_second=4) as live:
                while running():
                    time.sleep(0.25)
                    live.update(_record_table(recorder, started))
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        stop.set()
        spinner.join(timeout=5)
        path = recorder.close()
        problems = recorder.problems
        recorder.destroy_node()
        rclpy.try_shutdown()
    stats = recorder.stats()
    if stop_requested.is_set():
        console.print("stopped by a signal; the bag is closed")
    console.print(f"wrote {path}: {stats.messages} messages in {stats.file_index} file(s)")
    return damaged(console, problems, f"{stats.messages} messages written")


# ---------------------------------------------------------------------- play
def cmd_play(args, console: Console) -> int:
    import rclpy

    from agentchemist_ros.tools.bag.player import BagPlayer

    options = PlaybackOptions(rate=args.rate, fast=args.fast, start_offset_s=args.start_offset, until_s=args.until,
                              loop=args.loop, clock_hz=args.clock, topics=tuple(args.topics or ()),
                              remap=parse_remaps(args.remap), delay_s=args.delay)
    rclpy.init()
    try:
        player = BagPlayer(args.bag, options)
    except BagError:
        rclpy.try_shutdown()
        raise
    for problem in player.problems:
        console.print(f"[yellow]problem:[/yellow] {escape(str(problem))}")
    if args.wait_for_subscribers > 0 and not player.wait_for_subscribers(args.wait_for_subscribers):
        console.print(f"[yellow]not every topic has a subscriber after {args.wait_for_subscribers} s; playing anyway")
    total = sum(t.count for t in player.info.topics if t.name in player.publishers_by_topic)
    mode = "as fast as possible" if args.fast else f"at {args.rate}x"
    console.print(f"playing {args.bag} {mode}: {total} messages on {len(player.publishers_by_topic)} topics")
    worker = threading.Thread(target=player.play, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(timeout=0.5)
            if not args.no_progress:
                console.print(f"  {player.stats.messages}/{total} messages", end="\r", highlight=False)
    except KeyboardInterrupt:
        player.stop_event.set()
        worker.join(timeout=5)
    late = player.flush(FLUSH_S)
    stats = player.stats
    console.print(f"played {stats.messages} messages in {stats.wall_s:.2f} s ({stats.passes} pass(es))" + " " * 10)
    for topic, count in sorted(stats.per_topic.items()):
        console.print(f"  {escape(topic)} -> {escape(options.target(topic))}: {count}")
    problems = player.all_problems()
    if late:
        console.print(f"[yellow]not acknowledged by every subscriber within {FLUSH_S:g} s:[/yellow] "
                      f"{escape(', '.join(late))}")
    player.destroy_node()
    rclpy.try_shutdown()
    status = damaged(console, problems, f"{stats.messages} of {total} messages played")
    if stats.messages == 0 and not status:
        console.print("[red]nothing was played[/red]: " + ("the bag holds no messages" if total == 0 else
                                                            "no message could be read or matched the selection"))
        return DAMAGED
    return status


#: wall seconds `play` waits at the end for reliable subscribers to acknowledge the last messages
FLUSH_S = 10.0


# ---------------------------------------------------------------------- main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentchemist bag", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="record topics into a bag")
    r.add_argument("topics", nargs="*", help="topic names, patterns (/camera/*) or presets (sensors, agents, all)")
    r.add_argument("-a", "--all", action="store_true", help="every topic (except /clock, /rosout, /parameter_events)")
    r.add_argument("-o", "--output", help="bag folder to create (default rosbag2_<date>-<time>)")
    r.add_argument("-s", "--storage", choices=("mcap", "sqlite3"), default="mcap")
    r.add_argument("--compression", choices=("none", "zstd"), default="none",
                   help="zstd: compressed MCAP chunks, or per-message compression for sqlite3")
    r.add_argument("-b", "--max-bag-size", type=int, default=0, help="split files at this many bytes (0: never)")
    r.add_argument("-x", "--exclude", nargs="*", help="topic patterns not to record")
    r.add_argument("--use-sim-time", action="store_true", help="stamp messages with /clock time")
    r.add_argument("--duration", type=float, help="stop after this many wall seconds")
    r.add_argument("--no-progress", action="store_true")
    i = sub.add_parser("info", help="what a bag holds (like ros2 bag info)")
    i.add_argument("bag")
    i.add_argument("-v", "--verbose", action="store_true", help="also each topic's offered QoS")
    i.add_argument("--json", action="store_true")
    i.add_argument("--no-verify", action="store_true",
                   help="skip reading every message (MCAP chunk CRCs, SQLite integrity check); faster on big bags")
    p = sub.add_parser("play", help="publish a bag's messages")
    p.add_argument("bag")
    p.add_argument("-r", "--rate", type=float, default=1.0, help="speed factor of the original timing")
    p.add_argument("--fast", action="store_true", help="as fast as possible, publishing /clock at each message")
    p.add_argument("--topics", nargs="*", help="only these topics")
    p.add_argument("--remap", nargs="*", help="/from:=/to")
    p.add_argument("--start-offset", type=float, default=0.0, help="seconds into the bag to start at")
    p.add_argument("--until", type=float, help="seconds into the bag to stop at")
    p.add_argument("-l", "--loop", action="store_true")
    p.add_argument("--clock", type=float, default=0.0, help="publish /clock at this rate (Hz) in timed mode")
    p.add_argument("-d", "--delay", type=float, default=0.0, help="wait this long before playing (s)")
    p.add_argument("--wait-for-subscribers", type=float, default=0.0,
                   help="wait up to this long for every topic to have a subscriber (s)")
    p.add_argument("--no-progress", action="store_true")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    console = Console()
    handlers = {"info": cmd_info, "record": cmd_record, "play": cmd_play}
    try:
        return handlers[args.command](args, console)
    except (BagError, BagOptionError, ValueError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        return 2


if __name__ == "__main__":
    sys.exit(main())
