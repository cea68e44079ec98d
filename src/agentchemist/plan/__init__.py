"""Planner core: plan schema, protocol library, rule-based and LLM backends, hardware-registry checks.

Entry point: :func:`plan_instruction` (or a reusable :class:`Planner`).
"""

from agentchemist.plan.schema import Plan  # noqa: I001  (schema first: fsm imports it)
from agentchemist.plan.backends import (
    BackendError,
    OpenAICompatibleBackend,
    PlannerBackend,
    PlanValidationError,
    TransformersBackend,
    propose_validated,
)
from agentchemist.plan.checks import Finding, rectify_plan, verify_plan
from agentchemist.plan.guard import MAX_INSTRUCTION_BYTES, InstructionRejected, check_instruction
from agentchemist.plan.planner import PlanOutcome, Planner, plan_instruction
from agentchemist.plan.protocols import Protocol, ProtocolError, ProtocolLibrary
from agentchemist.plan.registry import HardwareRegistry, RegistryError
from agentchemist.plan.rules import RulesBackend
from agentchemist.plan.scene import SceneError, SceneInfo, SceneObject, missing_equipment_message

__all__ = [
    "BackendError",
    "Finding",
    "HardwareRegistry",
    "InstructionRejected",
    "MAX_INSTRUCTION_BYTES",
    "OpenAICompatibleBackend",
    "Plan",
    "PlanOutcome",
    "PlanValidationError",
    "Planner",
    "PlannerBackend",
    "Protocol",
    "ProtocolError",
    "ProtocolLibrary",
    "RegistryError",
    "RulesBackend",
    "SceneError",
    "SceneInfo",
    "SceneObject",
    "TransformersBackend",
    "check_instruction",
    "missing_equipment_message",
    "plan_instruction",
    "propose_validated",
    "rectify_plan",
    "verify_plan",
]
