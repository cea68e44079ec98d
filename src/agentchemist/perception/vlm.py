"""Vision backends for scene description and anomaly confirmation: OpenCV (default) or a
vision-language model behind an OpenAI-compatible ``/chat/completions`` endpoint.

The paper's vision supervisor is Qwen3-VL; ours defaults to marker and colour checks
(:mod:`agentchemist.perception.scene`, :mod:`agentchemist.perception.colour`), which need no model. A
VLM can be swapped in for the two questions a model answers better than rules:

* ``describe_scene(image)`` -> :class:`SceneReport` (a short description, the objects it sees, the
  preconditions it can judge);
* ``confirm_anomaly(image, text)`` -> :class:`AnomalyVerdict` (is the reported problem visible?) -
  the slow model confirms what a fast check flagged, as BioMARS does.

The HTTP backend uses only the standard library (``urllib``) with a timeout on every request; server
errors, timeouts and replies that are not the JSON asked for raise :class:`VlmError` subclasses with
the reason, never a made-up answer. Example::

    backend = make_backend("openai", base_url="http://127.0.0.1:8000/v1", model="qwen2.5-vl-7b")
    report = backend.describe_scene(front_rgb)
"""
from __future__ import annotations

import base64
import json
import math
import re
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import cv2
import numpy as np

from agentchemist.perception.colour import BeakerColourTracker, ColourError, LiquidRegionConfig
from agentchemist.perception.scene import describe_scene

__all__ = [
    "AnomalyVerdict",
    "OpenAICompatibleBackend",
    "OpenCVVisionBackend",
    "SceneReport",
    "VisionBackend",
    "VlmConnectionError",
    "VlmError",
    "VlmResponseError",
    "make_backend",
]


class VlmError(ValueError):
    """A vision backend could not answer."""


class VlmConnectionError(VlmError):
    """No answer from the endpoint in time (refused, unreachable, timed out)."""


class VlmResponseError(VlmError):
    """The endpoint answered, but not with what was asked (HTTP error, not JSON, missing fields)."""


@dataclass(frozen=True)
class SceneReport:
    """What a backend sees. ``objects``: dicts with at least ``id`` and ``kind`` (and ``u``, ``v`` image
    px when known); ``checks``: precondition name -> satisfied."""

    backend: str
    summary: str
    objects: list[dict] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class AnomalyVerdict:
    """``status`` confirmed / rejected / undetermined (the backend cannot judge this kind of problem);
    ``confidence`` in [0, 1]."""

    backend: str
    status: Literal["confirmed", "rejected", "undetermined"]
    confidence: float
    explanation: str

    @property
    def confirmed(self) -> bool:
        return self.status == "confirmed"


@runtime_checkable
class VisionBackend(Protocol):
    name: str

    def describe_scene(self, image_rgb: np.ndarray) -> SceneReport: ...

    def confirm_anomaly(self, image_rgb: np.ndarray, text: str) -> AnomalyVerdict: ...


def _check_image(image_rgb: np.ndarray) -> None:
    if not isinstance(image_rgb, np.ndarray) or image_rgb.ndim != 3 or image_rgb.shape[2] != 3 \
            or image_rgb.dtype != np.uint8:
        raise VlmError(f"vision backends take an RGB uint8 image, got {getattr(image_rgb, 'shape', type(image_rgb))}")


def _check_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise VlmError("the anomaly to confirm needs a non-empty description")
    if len(text) > 4000:
        raise VlmError(f"anomaly description of {len(text)} characters is too long (max 4000)")
    return text.strip()


# ---------------------------------------------------------------------------------------- OpenCV
#: words in an anomaly description -> the scene check that can confirm it
_CHECK_WORDS = {
    "pipette_in_beaker": ("pipette",),
    "beaker_on_stirrer": ("beaker", "stirrer"),
    "probe_immersed": ("probe", "electrode"),
}


class OpenCVVisionBackend:
    """Marker-based scene check plus the liquid colour; confirms anomalies about labware placement."""

    name = "opencv"

    def __init__(self, region: LiquidRegionConfig | None = None):
        self.region = region or LiquidRegionConfig()

    def describe_scene(self, image_rgb: np.ndarray) -> SceneReport:
        _check_image(image_rgb)
        desc = describe_scene(image_rgb)
        objects = [{"id": o.id, "kind": o.kind, "u": o.u, "v": o.v} for o in desc.objects]
        parts = [f"{len(objects)} tagged items: " + (", ".join(o["id"] for o in objects) or "none")]
        try:
            # A fresh tracker: a one-off description must not use a tag location remembered from before.
            colour = BeakerColourTracker(self.region).measure(image_rgb, 0.0)
            parts.append(f"liquid hue {colour.hue_deg:.0f} deg (saturation {colour.saturation:.2f})")
        except ColourError as exc:
            parts.append(f"liquid colour not readable: {exc}")
        failed = [f"{k}: {desc.reasons.get(k, '')}" for k, ok in desc.checks.items() if not ok]
        parts.append("preconditions met" if not failed else "not met: " + "; ".join(failed))
        return SceneReport(self.name, "; ".join(parts), objects, dict(desc.checks))

    def confirm_anomaly(self, image_rgb: np.ndarray, text: str) -> AnomalyVerdict:
        _check_image(image_rgb)
        words = _check_text(text).lower()
        desc = describe_scene(image_rgb)
        relevant = [k for k, keys in _CHECK_WORDS.items() if any(w in words for w in keys)]
        if not relevant:
            return AnomalyVerdict(self.name, "undetermined", 0.0,
                                  "no marker-based check covers this anomaly")
        failed = [k for k in relevant if not desc.checks.get(k, False)]
        if failed:
            return AnomalyVerdict(self.name, "confirmed", 0.9,
                                  "; ".join(f"{k}: {desc.reasons.get(k, 'failed')}" for k in failed))
        return AnomalyVerdict(self.name, "rejected", 0.7,
                              "the front camera shows " + ", ".join(relevant) + " as expected")


# ---------------------------------------------------------------------------------------- HTTP
_DESCRIBE_PROMPT = (
    "You watch a chemistry bench through the robot's front camera. Reply with one JSON object only: "
    '{"summary": str, "objects": [{"id": str, "kind": str}], "checks": {"beaker_on_stirrer": bool, '
    '"probe_immersed": bool, "pipette_in_beaker": bool}}. Leave out a check you cannot judge.'
)
_CONFIRM_PROMPT = (
    "A robot lab agent reported this anomaly: {text!r}. Look at the front camera image and reply with one "
    'JSON object only: {{"status": "confirmed" | "rejected" | "undetermined", "confidence": number 0..1, '
    '"explanation": str}}.'
)


class OpenAICompatibleBackend:
    """A VLM served behind ``POST {base_url}/chat/completions`` (vLLM, llama.cpp server, OpenAI ...).

    ``timeout_s`` bounds every request; ``api_key`` (optional) goes in the Authorization header.
    """

    name = "openai"

    def __init__(self, base_url: str, model: str, *, api_key: str = "", timeout_s: float = 20.0,
                 max_tokens: int = 400, temperature: float = 0.0):
        if not isinstance(base_url, str) or not re.match(r"^https?://[^\s/]+", base_url):
            raise ValueError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must name the served model")
        if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and 0 < timeout_s <= 600):
            raise ValueError(f"timeout_s must be in (0, 600] s, got {timeout_s!r}")
        if not (isinstance(max_tokens, int) and 1 <= max_tokens <= 8192):
            raise ValueError(f"max_tokens must be in 1..8192, got {max_tokens!r}")
        if not (math.isfinite(temperature) and 0 <= temperature <= 2):
            raise ValueError(f"temperature must be in [0, 2], got {temperature!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.timeout_s = float(timeout_s)
        self.max_tokens = max_tokens
        self.temperature = float(temperature)

    def describe_scene(self, image_rgb: np.ndarray) -> SceneReport:
        _check_image(image_rgb)
        reply = self._ask(image_rgb, _DESCRIBE_PROMPT)
        summary = reply.get("summary")
        if not isinstance(summary, str):
            raise VlmResponseError(f"scene reply has no 'summary' string: {reply!r:.200}")
        objects = reply.get("objects", [])
        if not isinstance(objects, list) or not all(isinstance(o, dict) and isinstance(o.get("id"), str)
                                                    and isinstance(o.get("kind"), str) for o in objects):
            raise VlmResponseError("scene reply 'objects' must be a list of {id, kind} objects")
        checks = reply.get("checks", {})
        if not isinstance(checks, dict) or not all(isinstance(v, bool) for v in checks.values()):
            raise VlmResponseError("scene reply 'checks' must map names to true/false")
        return SceneReport(self.name, summary, [dict(o) for o in objects], dict(checks))

    def confirm_anomaly(self, image_rgb: np.ndarray, text: str) -> AnomalyVerdict:
        _check_image(image_rgb)
        reply = self._ask(image_rgb, _CONFIRM_PROMPT.format(text=_check_text(text)))
        status, conf, why = reply.get("status"), reply.get("confidence"), reply.get("explanation", "")
        if status not in ("confirmed", "rejected", "undetermined"):
            raise VlmResponseError(f"anomaly reply status {status!r} is not confirmed/rejected/undetermined")
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not (math.isfinite(conf) and 0 <= conf <= 1):
            raise VlmResponseError(f"anomaly reply confidence {conf!r} is not a number in [0, 1]")
        if not isinstance(why, str):
            raise VlmResponseError("anomaly reply 'explanation' must be a string")
        return AnomalyVerdict(self.name, status, float(conf), why)

    # ------------------------------------------------------------------ transport
    def _ask(self, image_rgb: np.ndarray, prompt: str) -> dict:
        ok, png = cv2.imencode(".png", cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))
        if not ok:
            raise VlmError("could not encode the image as PNG")
        data_url = "data:image/png;base64," + base64.b64encode(png.tobytes()).decode("ascii")
        body = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": data_url}},
            ]}],
        }
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise VlmResponseError(f"{self.url} answered HTTP {exc.code}: {detail}") from None
        except (socket.timeout, TimeoutError) as exc:
            raise VlmConnectionError(f"{self.url} did not answer within {self.timeout_s:g} s") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (socket.timeout, TimeoutError)):
                raise VlmConnectionError(f"{self.url} did not answer within {self.timeout_s:g} s") from exc
            raise VlmConnectionError(f"{self.url} unreachable: {exc.reason}") from exc
        except OSError as exc:
            raise VlmConnectionError(f"{self.url}: {exc}") from exc
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise VlmResponseError(f"not a chat completion: {raw[:200]!r}") from None
        if not isinstance(content, str):
            raise VlmResponseError("the completion's message content is not text")
        return _json_object(content)


def _json_object(text: str) -> dict:
    """The JSON object in a model's reply (bare, or inside a ``` fence / surrounding prose)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise VlmResponseError(f"the model did not reply with a JSON object: {text[:200]!r}")
    try:
        value = json.loads(text[start:end + 1])
    except ValueError as exc:
        raise VlmResponseError(f"the model's JSON does not parse ({exc}): {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise VlmResponseError("the model's reply is not a JSON object")
    return value


def make_backend(name: str = "opencv", **options) -> VisionBackend:
    """``opencv`` (default, no options) or ``openai`` (base_url, model, api_key, timeout_s, ...)."""
    if name == "opencv":
        if options:
            raise ValueError(f"the opencv backend takes no options, got {sorted(options)}")
        return OpenCVVisionBackend()
    if name == "openai":
        return OpenAICompatibleBackend(**options)
    raise ValueError(f"unknown vision backend {name!r} (known: opencv, openai)")


def scene_summary(image_rgb: np.ndarray, n_objects: int, backend: VisionBackend) -> str:
    """What the DescribeScene service says beside the marker-based objects and checks (`n_objects` of them):
    their count, and a VLM backend's own description (or why it failed)."""
    message = f"{n_objects} objects"
    if backend.name != "opencv":
        try:
            message += ": " + backend.describe_scene(image_rgb).summary
        except VlmError as exc:
            message += f" (vision backend {backend.name} failed: {exc})"
    return message
