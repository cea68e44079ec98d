"""The planner's output: one strictly validated object with the five fields of SPEC.md section 2.

``Plan.model_dump_json()`` is what travels in ``ExperimentPlan.plan_json``; ``Plan.model_validate_json``
parses it back. Every model forbids unknown keys and type coercion (``strict``), and rejects NaN and
infinity, so a plan written by a language model either matches this schema exactly or is refused with
pydantic's messages (which the repair loop feeds back to the model).

Units are in the field names: ``_m`` mol/L, ``_ml`` millilitres, ``_g`` grams, ``_s`` seconds,
``_mm_s`` millimetres of gripper travel per second.

This module checks structure and single-field ranges only. Whether the state machine is well formed
(reachability, ambiguity, symbol producers) is ``agentchemist.fsm.validate_machine``; whether the plan
is physically possible (capacities, reachable pH, causal order) is ``agentchemist.plan.registry``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from agentchemist.experiments import family_names

__all__ = [
    "FAMILIES",
    "ROLES",
    "AudioParams",
    "ColourChange",
    "DispenserParams",
    "EnvironmentCheck",
    "Entities",
    "ExpectedTransition",
    "InitialConditions",
    "ModuleInstantiation",
    "ParsedInstruction",
    "Plan",
    "ProtocolRef",
    "ReagentEntity",
    "RecorderParams",
    "StateMachineSpec",
    "Subtask",
    "TargetConditions",
    "TransitionSpec",
    "VisionParams",
]

# The registered experiment families (agentchemist.experiments), as a Literal so that a plan names one of
# them and the JSON schema a language model is shown lists them.
FAMILIES: tuple[str, ...] = family_names()
Family = Literal[FAMILIES]  # type: ignore[valid-type]  # built from the registry
Role = Literal["analyte", "titrant", "solid", "solvent", "indicator"]
ROLES: tuple[str, ...] = ("analyte", "titrant", "solid", "solvent", "indicator")

# Identifiers used as state names, symbols, subtask ids and agent names: lower snake case, so that they
# survive a round trip through ROS string fields, file names and log lines unchanged.
_IDENT_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, validate_assignment=True)


def _ident(what: str) -> AfterValidator:
    def check(value: str) -> str:
        if not re.fullmatch(_IDENT_PATTERN, value):
            raise ValueError(f"{what} {value!r} must be lower snake case (a-z, 0-9, _), starting with a letter")
        return value

    return AfterValidator(check)


# The identifier fields by what they name (the name is in the error message); lists of them check each item.
StateName = Annotated[str, _ident("state")]
SymbolName = Annotated[str, _ident("symbol")]
SubtaskId = Annotated[str, _ident("subtask id")]
AgentName = Annotated[str, _ident("receiver")]


class ReagentEntity(_Strict):
    """A reagent named in the instruction. ``name`` is the reagent library's canonical name."""

    name: str = Field(min_length=1, max_length=64)
    role: Role
    concentration_m: Optional[float] = Field(default=None, gt=0, le=20.0)
    volume_ml: Optional[float] = Field(default=None, gt=0, le=10_000.0)
    mass_g: Optional[float] = Field(default=None, gt=0, le=10_000.0)
    # The concentration the experiment measures (a determination, a standardisation): then
    # ``concentration_m`` is only the planning estimate that sizes the draw and the feasibility checks;
    # the analysis reports the measured value. Only the analyte or the titrant can be the unknown.
    unknown: bool = False

    @model_validator(mode="after")
    def _unknown_is_estimated(self) -> "ReagentEntity":
        if self.unknown and self.role not in ("analyte", "titrant"):
            raise ValueError(f"only the analyte or the titrant can be the unknown, not the {self.role}")
        if self.unknown and self.concentration_m is None:
            raise ValueError("an unknown concentration needs a planning estimate in concentration_m")
        return self


class Entities(_Strict):
    """Instruments (registry kinds, e.g. 'ph_meter'), reagents, and other objects (scene ids or kinds)."""

    instruments: list[str] = Field(default_factory=list)
    reagents: list[ReagentEntity] = Field(default_factory=list)
    objects: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_unknown(self) -> "Entities":
        # Two unknowns in one titration cannot both be measured: the equivalence volume gives one ratio.
        unknown = [r.name for r in self.reagents if r.unknown]
        if len(unknown) > 1:
            raise ValueError(f"at most one reagent concentration can be the unknown, not {unknown}")
        return self


class InitialConditions(_Strict):
    """State of the analyte before the first action (all optional: not every family has them)."""

    initial_ph: Optional[float] = Field(default=None, ge=-2.0, le=16.0)
    analyte_volume_ml: Optional[float] = Field(default=None, gt=0, le=10_000.0)
    temperature_c: Optional[float] = Field(default=None, ge=-20.0, le=150.0)


class ColourChange(_Strict):
    """Expected colour change at the endpoint (e.g. magenta -> blue for Ca/EDTA with calcon)."""

    from_colour: str = Field(min_length=1, max_length=32)
    to_colour: str = Field(min_length=1, max_length=32)


class TargetConditions(_Strict):
    """What ends the experiment; at least one must be set (checked in the model validator).
    ``target_volume_ml`` is a fixed titrant volume (no pH target)."""

    target_ph: Optional[float] = Field(default=None, ge=-2.0, le=16.0)
    to_equivalence: bool = False
    target_volume_ml: Optional[float] = Field(default=None, gt=0)
    target_mass_g: Optional[float] = Field(default=None, gt=0)
    colour_change: Optional[ColourChange] = None

    @model_validator(mode="after")
    def _one_target(self) -> "TargetConditions":
        if (
            self.target_ph is None
            and not self.to_equivalence
            and self.target_volume_ml is None
            and (self.target_mass_g is None and self.colour_change is None)
        ):
            raise ValueError(
                "target_conditions needs one of target_ph, to_equivalence, target_volume_ml, target_mass_g, "
                "colour_change"
            )
        return self


class ParsedInstruction(_Strict):
    experiment_name: str = Field(min_length=1, max_length=200)
    family: Family
    entities: Entities
    initial_conditions: InitialConditions
    target_conditions: TargetConditions
    operation_intent: str = Field(min_length=1, max_length=2000)
    data_recording: list[str] = Field(default_factory=list)
    output_format: list[str] = Field(default_factory=list)
    operation_primitives: list[str] = Field(default_factory=list)


class EnvironmentCheck(_Strict):
    """Result of comparing what the plan needs with the scene; ``user_feedback`` is the SPEC sentence."""

    satisfied: bool
    missing_objects: list[str] = Field(default_factory=list)
    user_feedback: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "EnvironmentCheck":
        if self.satisfied and self.missing_objects:
            raise ValueError("environment_check: satisfied is true but missing_objects is not empty")
        if not self.satisfied and not self.missing_objects:
            raise ValueError("environment_check: satisfied is false but no missing object is named")
        return self


class TransitionSpec(_Strict):
    source: StateName
    symbol: SymbolName
    target: StateName


class StateMachineSpec(_Strict):
    """M = <Q, Sigma, delta, q0, F>; ``state_timeouts_s`` maps a state to its time limit (seconds)."""

    states: list[StateName] = Field(min_length=1, max_length=64)
    input_symbols: list[SymbolName] = Field(min_length=1, max_length=64)
    transitions: list[TransitionSpec] = Field(min_length=1, max_length=512)
    initial_state: str
    accepting_states: list[StateName] = Field(min_length=1)
    state_timeouts_s: dict[str, float] = Field(default_factory=dict)

    @field_validator("state_timeouts_s")
    @classmethod
    def _timeouts(cls, v: dict[str, float]) -> dict[str, float]:
        for state, limit in v.items():
            if not 0.0 < limit <= 86_400.0:
                raise ValueError(f"timeout for state {state!r} must be in (0, 86400] s, got {limit}")
        return v


class ExpectedTransition(_Strict):
    """<t_i, q_target>: the symbol that completes a subtask and the state the machine should reach."""

    symbol: str
    target: str


class Subtask(_Strict):
    """An atomic subtask for one agent; it is dispatched when the machine is in ``fsm_state``."""

    id: SubtaskId
    receiver: AgentName
    description: str = Field(min_length=1, max_length=500)
    dependencies: list[str] = Field(default_factory=list)
    fsm_state: str
    expected_transition: Optional[ExpectedTransition] = None
    primitive: str = Field(min_length=1, max_length=64)
    parameters: dict[str, JsonValue] = Field(default_factory=dict)


class DispenserParams(_Strict):
    """Statistics-based logger (dispenser controller) parameters.

    ``rate_mm_s`` gripper closing rate; ``settle_each_drop`` waits for a settled reading after every
    drop (or solid tap); ``settle_window_s`` the per-drop settling window; ``endpoint_stable_s`` how long
    the endpoint reading must stay stable; ``wait_on_change_threshold`` the rate of change (pH/s, or g/s
    for solids) above which the controller holds position. One of the targets ends dispensing;
    ``max_volume_ml`` is a hard cap (titrant that fits the beaker and the pipette).
    """

    # liquid_drops: squeezing the pipette bulb; solid_taps: tapping a spatula; solid_pour: tilting the
    # solid's own bottle in pulses (the robot's weighing method). The solid modes stop on the balance.
    mode: Literal["liquid_drops", "solid_taps", "solid_pour"]
    stop_on: Literal["ph", "volume", "mass", "colour"]
    rate_mm_s: float = Field(gt=0)
    settle_each_drop: bool
    settle_window_s: float = Field(gt=0)
    endpoint_stable_s: float = Field(gt=0)
    wait_on_change_threshold: float = Field(gt=0)
    target_ph: Optional[float] = Field(default=None, ge=-2.0, le=16.0)
    target_volume_ml: Optional[float] = Field(default=None, gt=0)
    target_mass_g: Optional[float] = Field(default=None, gt=0)
    mass_tolerance_g: Optional[float] = Field(default=None, gt=0)
    max_volume_ml: Optional[float] = Field(default=None, gt=0)
    drop_volume_ml: float = Field(default=0.046875, gt=0, le=1.0)

    @model_validator(mode="after")
    def _stop_condition_set(self) -> "DispenserParams":
        needed = {
            "ph": ("target_ph", self.target_ph),
            "volume": ("target_volume_ml", self.target_volume_ml),
            "mass": ("target_mass_g", self.target_mass_g),
            # A colour endpoint is seen by the vision supervisor; the dispenser still needs a hard cap.
            "colour": ("max_volume_ml", self.max_volume_ml),
        }[self.stop_on]
        if needed[1] is None:
            raise ValueError(f"dispenser stop_on={self.stop_on!r} needs {needed[0]}")
        if self.mode in ("solid_taps", "solid_pour") and self.stop_on != "mass":
            raise ValueError(f"dispenser mode {self.mode!r} stops on mass only")
        if self.mode == "liquid_drops" and self.stop_on == "mass":
            raise ValueError("dispenser mode 'liquid_drops' cannot stop on mass")
        return self


class RecorderParams(_Strict):
    """High-confidence recorder: confidence gate ``tau``, quantities recorded, divergence tolerance
    (relative) between channels before a data-quality flag."""

    tau: float = Field(ge=0.0, le=1.0)
    quantities: list[str] = Field(min_length=1)
    divergence_tolerance: float = Field(default=0.1, gt=0, le=1.0)


class VisionParams(_Strict):
    """Vision supervisor: endpoint channel, preconditions checked before the first action, and the
    colour change for complexometric endpoints."""

    endpoint: Literal["ph", "colour", "mass"]
    preconditions: list[str] = Field(default_factory=list)
    colour_from: Optional[str] = None
    colour_to: Optional[str] = None
    verify_hold_s: float = Field(default=5.0, gt=0)


class AudioParams(_Strict):
    """Audio supervisor: which event counts as expected, its nominal quantity, and the silence timeout."""

    enabled: bool
    event_kind: Literal["droplet", "tap", "pour", "none"]
    quantity_per_event_ml: Optional[float] = Field(default=None, gt=0)
    event_timeout_s: float = Field(gt=0)


class ModuleInstantiation(_Strict):
    dispenser: DispenserParams
    recorder: RecorderParams
    vision: VisionParams
    audio: AudioParams


class ProtocolRef(_Strict):
    id: str = Field(min_length=1, max_length=64)
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$")


class Plan(_Strict):
    """The whole plan. Construct through ``plan_instruction``; parse from JSON with ``model_validate_json``."""

    experiment_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    protocol: ProtocolRef
    parsed_instruction: ParsedInstruction
    environment_check: EnvironmentCheck
    state_machine: StateMachineSpec
    task_decomposition: list[Subtask] = Field(min_length=1, max_length=128)
    module_instantiation: ModuleInstantiation
    warnings: list[str] = Field(default_factory=list)

    def subtask(self, subtask_id: str) -> Subtask:
        """The subtask with this id (KeyError naming the known ids otherwise)."""
        for task in self.task_decomposition:
            if task.id == subtask_id:
                return task
        raise KeyError(f"no subtask {subtask_id!r}; known: {[t.id for t in self.task_decomposition]}")

    def reagent(self, role: str) -> Optional[ReagentEntity]:
        """The first reagent with this role, or None."""
        for reagent in self.parsed_instruction.entities.reagents:
            if reagent.role == role:
                return reagent
        return None
