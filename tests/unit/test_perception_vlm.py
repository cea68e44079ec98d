"""Vision backend seam: the OpenCV default, and the OpenAI-compatible HTTP backend against a local
http.server (request shape, parsing, timeouts, HTTP errors, malformed replies)."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from agentchemist.perception.vlm import (OpenAICompatibleBackend, OpenCVVisionBackend, VisionBackend,
                                         VlmConnectionError, VlmError, VlmResponseError, make_backend)
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import load_scenario
from tests.conftest import REPO


@pytest.fixture(scope="module")
def bench():
    scenario = load_scenario(REPO / "config" / "scenarios" / "ca_edta.yaml")
    return LabTwin(scenario).render_camera("front", 1.0)


@pytest.fixture(scope="module")
def no_pipette():
    scenario = load_scenario(REPO / "config" / "scenarios" / "missing_pipette.yaml")
    return LabTwin(scenario).render_camera("front", 1.0)


# ---------------------------------------------------------------- OpenCV default
def test_default_backend_is_opencv_and_describes_the_bench(bench):
    backend = make_backend()
    assert isinstance(backend, OpenCVVisionBackend) and isinstance(backend, VisionBackend)
    report = backend.describe_scene(bench)
    ids = {o["id"] for o in report.objects}
    assert {"beaker_main", "pipette", "stirrer"} <= ids
    assert report.checks["pipette_in_beaker"] and report.checks["beaker_on_stirrer"]
    assert "liquid hue 3" in report.summary  # magenta, about 329 deg


def test_opencv_confirms_only_what_it_can_see(bench, no_pipette):
    backend = OpenCVVisionBackend()
    assert backend.confirm_anomaly(no_pipette, "pipette missing from the beaker").status == "confirmed"
    assert backend.confirm_anomaly(bench, "pipette missing from the beaker").status == "rejected"
    verdict = backend.confirm_anomaly(bench, "unexpected clicking sound")
    assert verdict.status == "undetermined" and not verdict.confirmed
    with pytest.raises(VlmError):
        backend.confirm_anomaly(bench, "  ")
    with pytest.raises(VlmError):
        backend.describe_scene(bench[:, :, 0])


def test_backend_factory_refuses_unknown_names_and_bad_options():
    with pytest.raises(ValueError, match="unknown vision backend"):
        make_backend("qwen")
    with pytest.raises(ValueError, match="http"):
        make_backend("openai", base_url="ftp://x", model="m")
    with pytest.raises(ValueError, match="timeout_s"):
        make_backend("openai", base_url="http://127.0.0.1:1/v1", model="m", timeout_s=0)


# ---------------------------------------------------------------- HTTP backend
class _Server:
    """A chat-completions endpoint on loopback whose reply the test sets."""

    def __init__(self):
        self.requests = []
        self.reply = {"summary": "a beaker"}
        self.status = 200
        self.delay_s = 0.0
        self.raw = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                length = int(self.headers.get("Content-Length", 0))
                server.requests.append((self.path, dict(self.headers), json.loads(self.rfile.read(length))))
                if server.delay_s:
                    time.sleep(server.delay_s)
                if server.raw is not None:
                    body = server.raw
                else:
                    content = server.reply if isinstance(server.reply, str) else json.dumps(server.reply)
                    body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except BrokenPipeError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def test_describe_scene_sends_the_image_and_parses_the_reply(server, bench):
    server.reply = ("Here you go:\n```json\n" + json.dumps({
        "summary": "beaker of magenta liquid on a stirrer", "objects": [{"id": "beaker_main", "kind": "beaker"}],
        "checks": {"beaker_on_stirrer": True}}) + "\n```")
    backend = OpenAICompatibleBackend(server.url, "qwen-vl", api_key="k123", timeout_s=5)
    report = backend.describe_scene(bench)
    assert report.backend == "openai" and report.summary.startswith("beaker of magenta")
    assert report.objects == [{"id": "beaker_main", "kind": "beaker"}] and report.checks == {"beaker_on_stirrer": True}
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer k123"
    assert body["model"] == "qwen-vl"
    parts = body["messages"][0]["content"]
    image = next(p for p in parts if p["type"] == "image_url")["image_url"]["url"]
    assert image.startswith("data:image/png;base64,")
    import base64

    import cv2
    decoded = cv2.imdecode(np.frombuffer(base64.b64decode(image.split(",", 1)[1]), np.uint8), cv2.IMREAD_COLOR)
    assert decoded.shape == bench.shape and np.array_equal(decoded[:, :, ::-1], bench)  # lossless, RGB kept


def test_confirm_anomaly_parses_the_verdict(server, bench):
    server.reply = {"status": "confirmed", "confidence": 0.8, "explanation": "no pipette in the beaker"}
    backend = OpenAICompatibleBackend(server.url, "m", timeout_s=5)
    verdict = backend.confirm_anomaly(bench, "pipette missing")
    assert verdict.confirmed and verdict.confidence == 0.8
    prompt = server.requests[0][2]["messages"][0]["content"][0]["text"]
    assert "pipette missing" in prompt and "Authorization" not in server.requests[0][1]


@pytest.mark.parametrize("reply, match", [
    ({"status": "maybe", "confidence": 0.5, "explanation": ""}, "status"),
    ({"status": "confirmed", "confidence": 1.7, "explanation": ""}, "confidence"),
    ({"status": "confirmed", "confidence": float("nan"), "explanation": ""}, "confidence"),
    ("I think the pipette is missing.", "JSON object"),
    ("{not json}", "does not parse"),
])
def test_malformed_verdicts_are_errors(server, bench, reply, match):
    server.reply = reply
    with pytest.raises(VlmResponseError, match=match):
        OpenAICompatibleBackend(server.url, "m", timeout_s=5).confirm_anomaly(bench, "pipette missing")


def test_http_errors_and_non_completions(server, bench):
    backend = OpenAICompatibleBackend(server.url, "m", timeout_s=5)
    server.status = 500
    with pytest.raises(VlmResponseError, match="HTTP 500"):
        backend.describe_scene(bench)
    server.status, server.raw = 200, b'{"error": "no model"}'
    with pytest.raises(VlmResponseError, match="not a chat completion"):
        backend.describe_scene(bench)
    server.raw = None
    server.reply = {"summary": "x", "objects": [{"kind": "beaker"}]}
    with pytest.raises(VlmResponseError, match="objects"):
        backend.describe_scene(bench)


def test_timeout_and_unreachable(server, bench):
    server.delay_s = 1.0
    backend = OpenAICompatibleBackend(server.url, "m", timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(VlmConnectionError, match="within 0.2 s"):
        backend.describe_scene(bench)
    assert time.monotonic() - started < 0.9
    closed = _Server()
    url = closed.url
    closed.close()
    with pytest.raises(VlmConnectionError, match="unreachable"):
        OpenAICompatibleBackend(url, "m", timeout_s=1).describe_scene(bench)
