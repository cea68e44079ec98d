"""The console driven in headless Chromium against the running twin (issue 40, "Done when"): a titration
started from the page, the curve seen growing, paused and resumed, then an emergency stop that holds the
arms and ends the run with a named outcome; and no request without the token can start, pause or stop
anything. Screenshots at three moments go to $AGENTCHEMIST_CONSOLE_SHOTS when set (docs/images/ holds the
ones the docs show), else to the test's temporary folder.

Needs Chromium at /usr/bin/chromium (Debian: apt-get install chromium); Playwright drives it, never a
browser of its own. Skipped, saying so, without it. The fast check of the same server (token, log, page)
without a graph is tests/graph/test_console_server.py."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO
from tests.graph.conftest import _claim_domain

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TOKEN = "browser-test-token-0123456789"
#: the twin bench's own sentence, the first example the page offers
INSTRUCTION = load_scenario(REPO / "config" / "scenarios" / "hcl_naoh.yaml").instruction

#: the twin's pace: 4x by default; the docs' screenshots are taken at 0 (free run) with SHOT_ML set, so
#: that the running screenshot shows the jump
RTF = os.environ.get("AGENTCHEMIST_CONSOLE_RTF", "4")
SHOT_ML = float(os.environ.get("AGENTCHEMIST_CONSOLE_SHOT_ML", "0"))

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Chromium at /usr/bin/chromium "
                                 "(apt-get install chromium); Playwright never downloads a browser here")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, method: str = "GET", token: str | None = None, body: dict | None = None):
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = json.dumps(body or {}).encode() if method == "POST" else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers, method=method),
                                    timeout=90) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _serving(base: str) -> bool:
    try:
        return _request(f"{base}/")[0] == 200
    except urllib.error.URLError:
        return False  # not listening yet


def _state(base: str) -> dict:
    return json.loads(_request(f"{base}/api/state", token=TOKEN)[1])


def _wait(what: str, check, timeout: float, period: float = 0.5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(period)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def console(tmp_path):
    domain, lock = _claim_domain()
    port = _free_port()
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain))
    log = (tmp_path / "console.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "agentchemist_ros.tools.console", "--runs", str(tmp_path / "runs"),
                             "--port", str(port), "--token", TOKEN, "--rtf", RTF],
                            stdout=log, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait("the console to serve", lambda: _serving(base) if proc.poll() is None else True, timeout=180)
        assert proc.poll() is None, (tmp_path / "console.log").read_text()[-3000:]
        yield base, proc, tmp_path
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        lock.close()


def test_a_titration_watched_paused_and_emergency_stopped_in_the_browser(console):
    from playwright.sync_api import sync_playwright

    base, proc, tmp = console
    shots = Path(os.environ.get("AGENTCHEMIST_CONSOLE_SHOTS") or tmp / "shots")
    shots.mkdir(parents=True, exist_ok=True)

    # Without the token nothing starts, pauses or stops, and nothing is read.
    for path in ("start", "pause", "resume", "cancel", "emergency_stop", "plan"):
        for token in (None, "wrong-token-0123456789abcdef"):
            status, _ = _request(f"{base}/api/{path}", "POST", token, {"instruction": INSTRUCTION, "operator": "eve"})
            assert status == 401, (path, token, status)
    assert _request(f"{base}/api/state")[0] == 401 and _request(f"{base}/api/frame/front.jpg")[0] == 401
    assert _request(f"{base}/runs/console_commands.jsonl")[0] == 401
    assert _state(base)["experiment_id"] == ""  # the refused start started nothing

    with sync_playwright() as pw:
        # launch() gives Chromium a fresh, empty profile folder of its own (it refuses --user-data-dir)
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/?token={TOKEN}")
        assert "token" not in page.url  # the token leaves the address bar (and the history) at once
        page.fill("#operator", "ann")
        _wait("the examples", lambda: page.locator("#examples option").count() > 1, timeout=30)
        page.select_option("#examples", INSTRUCTION)
        page.click("#planbtn")
        page.wait_for_function("document.getElementById('plan').textContent.startsWith('plan: acid-base titration')",
                               timeout=120_000)
        # the plan's states, before anything started
        page.wait_for_function("document.getElementById('steps').textContent.includes('titrating')", timeout=10_000)
        assert "Titrate" in page.inner_text("#instruction") or page.input_value("#instruction") == INSTRUCTION
        page.screenshot(path=str(shots / "console_plan.png"))

        page.click("#start")
        first = _wait("the curve to start", lambda: _state(base)["points"] >= 5 and _state(base), timeout=240)
        grown = _wait("the curve to grow", lambda: (s := _state(base))["points"] > first["points"] + 10 and s,
                      timeout=120)
        assert grown["volume_ml"] > first["volume_ml"] and grown["drops"] > 0
        # the page draws what the API holds: its own copy of the curve grows too
        _wait("the page's curve", lambda: page.evaluate("curve.length") >= grown["points"], timeout=10)
        _wait("a camera frame", lambda: page.evaluate("document.getElementById('cam_front').naturalWidth") > 0,
              timeout=20)
        assert grown["state"] in page.inner_text("#steps")
        if SHOT_ML:
            _wait(f"{SHOT_ML} mL", lambda: _state(base)["volume_ml"] >= SHOT_ML, timeout=300)
            page.wait_for_timeout(1500)
        page.screenshot(path=str(shots / "console_running.png"))

        page.click("#pause")
        page.wait_for_function("document.getElementById('status').textContent === 'PAUSED'", timeout=30_000)
        held = _state(base)
        time.sleep(4.0)  # four wall seconds at 4x: sixteen seconds of the twin with the dispenser held
        still = _state(base)
        assert still["volume_ml"] == pytest.approx(held["volume_ml"], abs=0.06), "the dispenser went on while paused"
        assert not still["terminal"]
        page.click("#resume")
        page.wait_for_function("document.getElementById('status').textContent === 'running'", timeout=30_000)
        _wait("dispensing to go on", lambda: _state(base)["volume_ml"] > still["volume_ml"] + 0.1, timeout=120)

        page.click("#estop")
        stopped = _wait("the run to end", lambda: (s := _state(base))["terminal"] and s, timeout=60)
        assert stopped["state"] == "aborted"
        time.sleep(3.0)  # twelve twin seconds after the stop: nothing moves and nothing more is dispensed
        after = _state(base)
        assert after["clock"] > stopped["clock"] + 5.0, "the twin's clock stood still: nothing was checked"
        assert after["moved_since_stop"] < 5e-5, f"the arms moved after the emergency stop: {after}"
        assert after["volume_ml"] == pytest.approx(stopped["volume_ml"], abs=0.1)
        result = _wait("the run's result", lambda: _state(base)["result"], timeout=180)
        assert result["outcome"] == "aborted" and "emergency stop by ann" in result["message"]
        assert any(a["kind"] == "operator_stop" for a in _state(base)["anomalies"])
        page.wait_for_function("document.getElementById('report').src.includes('/report.html')", timeout=30_000)
        page.wait_for_timeout(1500)
        report_text = page.frame_locator("#report").locator("body").inner_text()
        assert "aborted" in report_text.lower() or "interrupted" in report_text.lower()
        page.screenshot(path=str(shots / "console_stopped.png"))
        _wait("the past runs", lambda: result["experiment_id"] in page.inner_text("#runs"), timeout=10)
        browser.close()

    entries = [json.loads(line) for line in (tmp / "runs" / "console_commands.jsonl").read_text().splitlines()]
    assert [e["command"] for e in entries if e["accepted"]] == ["plan", "start", "pause", "resume", "emergency_stop"]
    assert all(e["operator"] == "ann" for e in entries if e["accepted"])
    assert sum(e["command"] == "refused" for e in entries) == 12  # every refused POST, logged
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
