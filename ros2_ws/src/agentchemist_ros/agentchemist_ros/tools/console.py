"""`agentchemist console`: the chemist's web page on the graph (aiohttp), on the twin or beside a running graph.

    agentchemist console [--attach] [--host 127.0.0.1] [--port 8765] [--token T] [--scenario F] [--runs D] [--rtf X]

Every /api request and every report file needs the token printed at start-up (Authorization: Bearer, or
?token=); every command is written to RUNS/console_commands.jsonl with who sent it (docs/howto/watch_a_run.md).
"""
import argparse
import asyncio
import os
import signal
import sys
import threading
import time
from pathlib import Path

import rclpy
from aiohttp import web
from rclpy.parameter import Parameter
from rich.console import Console

from agentchemist import exit_codes
from agentchemist.console.auth import TokenAuth, new_token
from agentchemist.console.command_log import CommandLog
from agentchemist.console.runs import past_runs
from agentchemist.paths import config_dir
from agentchemist.sim.scenario import load_scenario
from agentchemist_ros.tools.console_node import CAMERAS, ConsoleNode
from agentchemist_ros.tools.graph import Graph, ensure_init

import agentchemist.console
PAGE = Path(agentchemist.console.__file__).resolve().parent / "page.html"  # the core ships the page (ROS-free)
WAIT_S = 60.0  # the planner's answer to a plan (its first start discovers the graph: seconds on a loaded machine)


async def _await(future, timeout: float):
    end = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > end:
            raise TimeoutError("the graph did not answer in time")
        await asyncio.sleep(0.05)
    return future.result()


def make_app(node, auth: TokenAuth, log: CommandLog, runs_dir: Path, examples: list[str]) -> web.Application:
    @web.middleware
    async def guard(request, handler):
        if request.path == "/" or request.path == "/favicon.ico":
            return await handler(request)  # the page itself holds nothing; it asks for the token
        if not auth.allows(request.headers.get("Authorization"), request.query.get("token")):
            if request.method == "POST":
                log.record(now=time.time(), command="refused", operator="", address=request.remote or "",
                           accepted=False, message="no valid token", detail=request.path)
            return web.json_response({"error": "a valid token is needed (printed when the console started)"},
                                     status=401)
        return await handler(request)

    async def command(request, name):
        body = await request.json() if request.can_read_body else {}
        who = str(body.get("operator") or "").strip()[:80]
        instruction = str(body.get("instruction") or "").strip()[:2000]
        accepted, message, extra = False, "", {}
        try:
            if name in ("plan", "start") and not instruction:
                message = "type or pick an instruction first"
            elif name == "plan":
                handle = await _await(node.plan(instruction), WAIT_S)
                result = (await _await(handle.get_result_async(), WAIT_S)).result
                accepted, message = True, result.message
                extra = {"outcome": result.outcome, "plan_json": result.plan_json}
                node.view.set_plan_preview({"instruction": instruction, **extra, "message": message})
            elif name == "start":
                handle = await _await(node.start(instruction), WAIT_S)
                accepted, message = bool(handle.accepted), "started" if handle.accepted else "the planner refused"
            elif name in ("pause", "resume"):
                response = await _await(node.pause(name == "pause"), 15.0)
                accepted, message = bool(response.success), response.message
            elif name in ("cancel", "emergency_stop"):
                if not node.view.experiment_id or node.view.terminal:
                    message = "no experiment is running"
                else:
                    what = "emergency stop" if name == "emergency_stop" else "cancelled"
                    node.halt(f"{what} by {who or 'the operator'} from the console")
                    accepted, message = True, f"{what}: the supervisor ends the run"
        except TimeoutError as exc:
            message = str(exc)
        log.record(now=time.time(), command=name, operator=who, address=request.remote or "", accepted=accepted,
                   message=message, detail=instruction)
        return web.json_response({"accepted": accepted, "message": message, **extra})

    async def state(request):
        return web.json_response(node.view.snapshot(int(request.query.get("since", "0") or 0)))

    async def frame(request):
        cam = request.match_info["camera"]
        data = node.jpeg(cam) if cam in CAMERAS else None
        return web.Response(body=data, content_type="image/jpeg") if data else web.Response(status=204)

    async def runs(request):
        return web.json_response({"runs": [r.as_dict() for r in past_runs(runs_dir)], "commands": log.entries(20),
                                  "examples": examples})

    async def page(request):
        return web.FileResponse(PAGE)

    app = web.Application(middlewares=[guard])
    app.router.add_get("/", page)
    app.router.add_get("/api/state", state)
    app.router.add_get("/api/runs", runs)
    app.router.add_get("/api/frame/{camera}.jpg", frame)
    for name in ("plan", "start", "pause", "resume", "cancel", "emergency_stop"):
        app.router.add_post(f"/api/{name}", lambda request, n=name: command(request, n))
    app.router.add_static("/runs/", runs_dir, show_index=False)
    return app


async def serve(app, host: str, port: int, stop: threading.Event) -> None:
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    while not stop.is_set():
        await asyncio.sleep(0.2)
    await runner.cleanup()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="agentchemist console", description=__doc__.splitlines()[0])
    parser.add_argument("--attach", action="store_true", help="join a graph that already runs instead of the twin")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default localhost only)")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token", default=os.environ.get("AGENTCHEMIST_CONSOLE_TOKEN"),
                        help="access token (default $AGENTCHEMIST_CONSOLE_TOKEN, else a fresh one)")
    parser.add_argument("--scenario", default=str(config_dir() / "scenarios" / "hcl_naoh.yaml"))
    parser.add_argument("--runs", required=True, help="folder of the run folders")
    parser.add_argument("--rtf", type=float, default=5.0, help="the twin's pace (default 5x: a curve you can watch)")
    parser.add_argument("--use-sim-time", action="store_true", help="with --attach: the graph runs on /clock")
    args = parser.parse_args(argv)
    out = Console(soft_wrap=True)
    try:
        auth = TokenAuth(args.token or new_token())
        scenario = load_scenario(args.scenario)
    except (OSError, ValueError) as exc:
        out.print(f"[red]error:[/red] {exc}")
        return exit_codes.USAGE
    token = args.token or auth._token.decode()
    runs_dir = Path(args.runs).expanduser().resolve()
    runs_dir.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    from rclpy.signals import SignalHandlerOptions
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    ensure_init()
    graph = None
    if not args.attach:
        out.print(f"starting the node graph on the twin ({scenario.name}) ...")
        graph = Graph(args.scenario, runs_dir, real_time_factor=args.rtf,
                      overrides={"lab_sim": {"free_run": args.rtf <= 0.0, "cameras": list(CAMERAS)}})
        node = ConsoleNode()
        graph.time_source.attach_clock(node.get_clock())  # the twin's time, as every node of the graph
        graph.executor.add_node(node)
        spin = graph.spin_once
    else:
        node = ConsoleNode(parameter_overrides=[Parameter("use_sim_time", value=args.use_sim_time)])
        from agentchemist_ros.common.runner import make_executor
        executor = make_executor()
        executor.add_node(node)
        spin = executor.spin_once
    spinner = threading.Thread(target=lambda: [spin(0.05) for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    examples = [scenario.instruction] + [load_scenario(config_dir() / "scenarios" / f).instruction
                                         for f in ("plain_acetic_to_82.yaml", "nacl_weighing.yaml")
                                         if (config_dir() / "scenarios" / f).is_file()]
    app = make_app(node, auth, CommandLog(runs_dir / "console_commands.jsonl"), runs_dir, examples)
    out.print(f"[bold]AgentChemist console[/bold]: http://{args.host}:{args.port}/?token={token}")
    out.print(f"commands are logged to {runs_dir / 'console_commands.jsonl'}; Ctrl-C stops")
    try:
        asyncio.run(serve(app, args.host, args.port, stop))
    except OSError as exc:
        out.print(f"[red]error:[/red] cannot serve on {args.host}:{args.port}: {exc}")
        stop.set()
        return exit_codes.USAGE
    finally:
        stop.set()
        spinner.join(timeout=5)
        if graph is not None:
            graph.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    out.print("console stopped")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
