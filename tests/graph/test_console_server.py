"""The console's server (agentchemist_ros.tools.console) with its real ROS node and no graph behind it: the
fast check of what the browser test (tests/e2e/test_console_browser.py, slow) relies on. Without the
token nothing is read and nothing is sent (each refused command logged); with it the page, the state, the
past runs and a run's report are served, and a command the graph cannot carry out says so."""
from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp.test_utils import TestClient, TestServer

TOKEN = "server-test-token-0123456789"


@pytest.fixture
def console_app(tmp_path):
    import rclpy

    from agentchemist.console.auth import TokenAuth
    from agentchemist.console.command_log import CommandLog
    from agentchemist_ros.tools.console import make_app
    from agentchemist_ros.tools.console_node import ConsoleNode

    rclpy.init()
    node = ConsoleNode()
    runs = tmp_path / "runs"
    (runs / "exp-1").mkdir(parents=True)
    (runs / "exp-1" / "report.json").write_text(json.dumps({"outcome": {"kind": "completed", "message": "ok"}}))
    (runs / "exp-1" / "report.html").write_text("<html><body>the report</body></html>")
    log = CommandLog(runs / "console_commands.jsonl")
    yield make_app(node, TokenAuth(TOKEN), log, runs, ["Titrate ..."]), log
    node.destroy_node()
    rclpy.try_shutdown()


def _run(app, scenario):
    async def main():
        async with TestClient(TestServer(app)) as client:
            return await scenario(client)
    return asyncio.run(main())


def test_nothing_without_the_token(console_app):
    app, log = console_app

    async def scenario(client):
        codes = {}
        for name in ("plan", "start", "pause", "resume", "cancel", "emergency_stop"):
            for headers in ({}, {"Authorization": "Bearer not-the-token-0123456789"}, {"Authorization": TOKEN}):
                r = await client.post(f"/api/{name}", json={"instruction": "Titrate ...", "operator": "eve"},
                                      headers=headers)
                codes[(name, str(headers))] = r.status
        for path in ("/api/state", "/api/runs", "/api/frame/front.jpg", "/runs/exp-1/report.html",
                     "/runs/console_commands.jsonl", "/api/state?token=wrong-token-0123456789"):
            codes[path] = (await client.get(path)).status
        page = await client.get("/")
        return codes, page.status, await page.text()

    codes, page_status, page = _run(app, scenario)
    assert set(codes.values()) == {401}, codes
    assert page_status == 200 and "AgentChemist console" in page and TOKEN not in page
    refused = [e for e in log.entries(100) if e["command"] == "refused"]
    assert len(refused) == 18 and {e["detail"] for e in refused} >= {"/api/start", "/api/emergency_stop"}


def test_with_the_token(console_app):
    app, log = console_app
    auth = {"Authorization": f"Bearer {TOKEN}"}

    async def scenario(client):
        state = await (await client.get("/api/state", headers=auth)).json()
        runs = await (await client.get("/api/runs", headers=auth)).json()
        report = await client.get(f"/runs/exp-1/report.html?token={TOKEN}")
        frame = await client.get("/api/frame/front.jpg", headers=auth)
        other = await client.get("/api/frame/secret.jpg", headers=auth)
        empty = await (await client.post("/api/start", json={"operator": "ann"}, headers=auth)).json()
        stop = await (await client.post("/api/emergency_stop", json={"operator": "ann"}, headers=auth)).json()
        escape = await client.get(f"/runs/../../etc/passwd?token={TOKEN}")
        return state, runs, report.status, await report.text(), frame.status, other.status, empty, stop, escape.status

    state, runs, report_status, report, frame, other, empty, stop, escape = _run(app, scenario)
    assert state["experiment_id"] == "" and state["curve"] == []
    assert [(r["experiment_id"], r["outcome"]) for r in runs["runs"]] == [("exp-1", "completed")]
    assert runs["examples"] == ["Titrate ..."]
    assert report_status == 200 and "the report" in report
    assert (frame, other) == (204, 204)  # no frame yet; no camera of that name
    assert not empty["accepted"] and "instruction" in empty["message"]
    assert not stop["accepted"] and stop["message"] == "no experiment is running"
    assert escape in (403, 404)
    assert [(e["command"], e["operator"], e["accepted"]) for e in log.entries()] == \
        [("start", "ann", False), ("emergency_stop", "ann", False)]
