"""Planner backends behind one seam, and the bounded repair loop that validates what they propose.

A backend turns (instruction, scene, protocol hint) into a raw plan dict, or into
``{"question": ...}`` / ``{"refusal": ..., "reasons": [...]}``. ``propose_validated`` checks the raw
plan against the schema and the machine validator and, for model backends, feeds the errors back
(at most ``max_repairs`` times). Output that still does not validate is a :class:`PlanValidationError`
with the messages: never a half-plan.

Backends: :class:`~agentchemist.plan.rules.RulesBackend` (default), :class:`OpenAICompatibleBackend`
(vLLM, Ollama, llama.cpp server; urllib, no extra dependencies) and :class:`TransformersBackend`
(local model; transformers and torch are imported only when it is first used).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import ValidationError

from agentchemist.fsm.validation import validate_machine
from agentchemist.params import param
from agentchemist.plan.scene import SceneInfo
from agentchemist.plan.schema import Plan

__all__ = [
    "BackendConfig",
    "BackendError",
    "BackendOutputError",
    "OpenAICompatibleBackend",
    "PlanValidationError",
    "PlannerBackend",
    "Proposal",
    "TransformersBackend",
    "build_messages",
    "extract_json_object",
    "propose_validated",
]


class BackendError(RuntimeError):
    """The backend could not be reached or failed (network, timeout, missing model)."""


class BackendOutputError(BackendError):
    """The backend answered, but not with a JSON object; ``text`` is what it said."""

    def __init__(self, message: str, text: str) -> None:
        self.text = text
        super().__init__(message)


class PlanValidationError(ValueError):
    """A proposal that still fails validation after the repair budget; ``messages`` lists why."""

    def __init__(self, messages: list[str], attempts: int) -> None:
        self.messages = messages
        self.attempts = attempts
        super().__init__(f"plan invalid after {attempts} attempt(s): " + "; ".join(messages[:10]))


@runtime_checkable
class PlannerBackend(Protocol):
    """What every planner backend provides. ``repair`` is optional (see ``propose_validated``)."""

    name: str

    def propose(self, text: str, scene: SceneInfo | None, protocol_hint: dict[str, Any] | None) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Proposal:
    """What ``propose_validated`` returns: a validated plan, or the backend's question / refusal."""

    kind: Literal["plan", "question", "refusal"]
    plan: Plan | None = None
    message: str = ""
    reasons: list[str] = field(default_factory=list)
    attempts: int = 1


def _format_validation(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "<plan>"
        out.append(f"{loc}: {err.get('msg', 'invalid')}")
    return out


def _check(raw: Any, defaults: dict[str, Any]) -> tuple[Plan | None, list[str]]:
    if not isinstance(raw, dict):
        return None, [f"the output must be a JSON object, got {type(raw).__name__}"]
    data = {**defaults, **raw}
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        return None, _format_validation(exc)
    reasons = validate_machine(plan)
    return (None, reasons) if reasons else (plan, [])


def _special(raw: Any) -> Proposal | None:
    if isinstance(raw, dict) and set(raw) <= {"question", "refusal", "reasons"}:
        reasons = [str(r) for r in raw.get("reasons") or []]
        if isinstance(raw.get("question"), str) and raw["question"].strip():
            return Proposal("question", None, raw["question"].strip(), reasons or [raw["question"].strip()])
        if isinstance(raw.get("refusal"), str) and raw["refusal"].strip():
            return Proposal("refusal", None, raw["refusal"].strip(), reasons or [raw["refusal"].strip()])
    return None


def propose_validated(
    backend: PlannerBackend,
    text: str,
    scene: SceneInfo | None,
    protocol_hint: dict[str, Any] | None,
    *,
    max_repairs: int = 2,
    defaults: dict[str, Any] | None = None,
) -> Proposal:
    """Propose, validate, and repair up to ``max_repairs`` times; PlanValidationError if still invalid.

    ``defaults`` fills top-level keys the backend may leave out (experiment_id, protocol, warnings).
    Backends with a ``repair(text, scene, hint, previous, errors)`` method get their previous output
    and the errors; others are asked again with the errors added to the hint under ``previous_errors``.
    """
    if max_repairs < 0:
        raise ValueError(f"max_repairs must be >= 0, got {max_repairs}")
    defaults = dict(defaults or {})
    attempts = 0
    previous: Any = None
    errors: list[str] = []
    while True:
        attempts += 1
        try:
            if attempts == 1:
                raw = backend.propose(text, scene, protocol_hint)
            elif hasattr(backend, "repair"):
                raw = backend.repair(text, scene, protocol_hint, previous, errors)  # type: ignore[attr-defined]
            else:
                raw = backend.propose(text, scene, {**(protocol_hint or {}), "previous_errors": errors})
        except BackendOutputError as exc:
            previous, errors = exc.text, [f"the output is not a JSON object ({exc})"]
        else:
            special = _special(raw)
            if special is not None:
                return Proposal(special.kind, None, special.message, special.reasons, attempts)
            plan, errors = _check(raw, defaults)
            if plan is not None:
                return Proposal("plan", plan, "", [], attempts)
            previous = raw
        if attempts > max_repairs:
            raise PlanValidationError(errors, attempts)


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (code fences and prose around it are skipped)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    raise BackendOutputError("no JSON object in the model's answer", text[:2000])


_SYSTEM = """You are the Planner Agent of AgentChemist, a multi-agent robot that runs chemistry experiments.
Turn the user's instruction and the scene into ONE JSON object that validates against the JSON Schema below
(no other keys, no comments, numbers as numbers). Start from the vetted protocol template given as the hint:
keep its state machine, subtasks and module parameters, and fill the placeholders from the instruction.
Agents: planner, vision_supervisor, audio_supervisor, action_policy, dispenser_controller, recorder, summarizer.
If something essential is missing (target, reagent, concentration) answer {"question": "..."} instead.
If the instruction cannot or must not be executed answer {"refusal": "...", "reasons": ["..."]}.
Never exceed hardware limits; a deterministic checker verifies every plan and refuses unsafe ones."""


def build_messages(text: str, scene: SceneInfo | None, protocol_hint: dict[str, Any] | None) -> list[dict[str, str]]:
    """Chat messages for a model backend: system (role + schema), user (instruction + scene + hint)."""
    schema = json.dumps(Plan.model_json_schema(), separators=(",", ":"))
    scene_json = "null"
    if scene is not None:
        scene_json = json.dumps(
            {
                # what stands on what is what lets a model tell "the beaker on the stirrer" from clutter
                "objects": [
                    {"id": o.id, "kind": o.kind, "contains": o.contains, "capacity_ml": o.capacity_ml,
                     "label": o.label, "on": o.on, "position_px": [o.u, o.v] if o.located else None}
                    for o in scene.objects
                ],
                "preconditions": dict(scene.preconditions),
            }
        )
    hint = json.dumps(protocol_hint or {}, separators=(",", ":"), default=str)
    return [
        {"role": "system", "content": f"{_SYSTEM}\nJSON Schema of the plan:\n{schema}"},
        {
            "role": "user",
            "content": f"Instruction:\n{text}\n\nScene:\n{scene_json}\n\nProtocol template (hint):\n{hint}",
        },
    ]


def _repair_messages(
    text: str, scene: SceneInfo | None, hint: dict[str, Any] | None, previous: Any, errors: list[str]
) -> list[dict[str, str]]:
    prev = previous if isinstance(previous, str) else json.dumps(previous, default=str)
    return build_messages(text, scene, hint) + [
        {"role": "assistant", "content": prev[:20000]},
        {
            "role": "user",
            "content": "That output is invalid:\n- "
            + "\n- ".join(errors[:30])
            + "\nReturn the corrected JSON object only.",
        },
    ]


class _ChatBackend:
    """Shared propose/repair over a ``_complete(messages) -> str`` chat call."""

    name = "chat"

    def _complete(self, messages: list[dict[str, str]]) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def propose(self, text: str, scene: SceneInfo | None, protocol_hint: dict[str, Any] | None) -> dict[str, Any]:
        return extract_json_object(self._complete(build_messages(text, scene, protocol_hint)))

    def repair(
        self, text: str, scene: SceneInfo | None, protocol_hint: dict[str, Any] | None, previous: Any, errors: list[str]
    ) -> dict[str, Any]:
        return extract_json_object(self._complete(_repair_messages(text, scene, protocol_hint, previous, errors)))


class OpenAICompatibleBackend(_ChatBackend):
    """POST {base_url}/chat/completions (OpenAI wire format), JSON mode requested, greedy decoding."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        timeout_s: float = 60.0,
        *,
        api_key: str | None = None,
        max_tokens: int = 4096,
        json_mode: bool = True,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ValueError("model must be a non-empty name")
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s = float(timeout_s)
        self.api_key = api_key
        self.max_tokens = int(max_tokens)
        self.json_mode = json_mode

    def _complete(self, messages: list[dict[str, str]]) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
        }
        if self.json_mode:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise BackendError(f"{self.base_url}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise BackendError(f"{self.base_url}: {getattr(exc, 'reason', exc)}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise BackendError(f"{self.base_url}: response is not JSON ({exc})") from None
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"{self.base_url}: response has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise BackendError(f"{self.base_url}: message content is not text")
        return content


class TransformersBackend(_ChatBackend):
    """A local causal LM through transformers (chat template, greedy). Imports torch lazily."""

    name = "transformers"

    def __init__(self, model_path: str, *, max_new_tokens: int = 2048, device: str = "cpu") -> None:
        self.model_path = model_path
        self.max_new_tokens = int(max_new_tokens)
        self.device = device
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._model is not None:
            return
        try:
            import torch  # noqa: F401
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise BackendError(f"the transformers backend needs torch and transformers installed ({exc})") from None
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(self.model_path)
            self._model = AutoModelForCausalLM.from_pretrained(self.model_path).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise BackendError(f"cannot load model {self.model_path!r}: {exc}") from None

    def _complete(self, messages: list[dict[str, str]]) -> str:
        self._load()
        import torch

        # return_dict: transformers 5 returns a BatchEncoding either way; 4.x needs asking for it.
        encoded = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                      return_dict=True)
        input_ids = encoded["input_ids"].to(self.device)
        attention = encoded.get("attention_mask")
        with torch.no_grad():
            out = self._model.generate(input_ids, attention_mask=None if attention is None else attention.to(self.device),
                                       max_new_tokens=self.max_new_tokens, do_sample=False)
        return self._tokenizer.decode(out[0, input_ids.shape[-1] :], skip_special_tokens=True)


@dataclass(frozen=True)
class BackendConfig:
    """Which backend plans and where its model is (the planner node declares these as its parameters)."""

    backend: str = param(
        "rules",
        choices=("rules", "openai", "transformers", "rules+openai", "rules+transformers"),
        description="Planner backend (rules+X: the rules, and the model X where they would ask a question)",
    )
    llm_url: str = param("http://127.0.0.1:8000/v1", description="OpenAI-compatible endpoint (backend openai)")
    llm_model: str = param("", description="Model name or local path for the LLM backends")
    llm_timeout_s: float = param(60.0, unit="s", low=1.0, high=600.0, description="LLM request timeout")

    def create(self) -> str | PlannerBackend:
        """The backend for one planning call: "rules" by name; an LLM backend is built each time, so a
        missing endpoint or model is that call's error (a planner with no LLM still starts)."""
        model: PlannerBackend | None = None
        if self.backend.endswith("openai"):
            model = OpenAICompatibleBackend(self.llm_url, self.llm_model, timeout_s=self.llm_timeout_s)
        elif self.backend.endswith("transformers"):
            model = TransformersBackend(self.llm_model)
        if model is None:
            return "rules"
        if self.backend.startswith("rules+"):
            from agentchemist.plan.routing import RulesThenModel  # routing imports this module

            return RulesThenModel(model)
        return model
