"""Scenario files for the lab twin: what is on the bench, in which state, with which faults.

A scenario is a YAML file (``config/scenarios/*.yaml``) validated by the pydantic models below.
Every model forbids unknown keys, so a typo is refused with the close match; reagent names are checked
against the reagent library and normalised to their canonical names; cross-references (ids named in
``on:``, fault targets, the beaker/pipette/probe/stirrer ids) must exist in the layout.
Errors are :class:`ScenarioError` naming the file, the key path and the problem::

    >>> scenario_from_dict({"name": "x"}, source="demo.yaml")      # doctest: +SKIP
    ScenarioError: invalid scenario
      demo.yaml: seed: required key is missing
      ...

To vary a shipped scenario in a test or benchmark, read it with :func:`read_scenario_yaml`, change the
mapping and validate it with :func:`scenario_from_dict`.

Units are in the field names (``_ml``, ``_s``, ``_M`` = mol/L, ``_mm``, ``_m``, ``_g``, ``_deg``).
Pixel positions (u, v) refer to the front camera at the scenario's ``cameras.width`` x ``height``.
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentchemist.limits import InputLimitError, load_yaml, read_text
from agentchemist.workcell.inventory import InventoryError, inventory_from_dict
from agentchemist.workcell.labware import LABWARE_KINDS
from agentchemist.workcell.tags import FREE_IDS, default_marker_id
from agentchemist.chemistry.reagents import UnknownReagentError, default_library
from agentchemist.sim.errors import ScenarioError
from agentchemist.sim.indicators import INDICATORS, indicator_for

__all__ = [
    "AudioSpec",
    "BalanceSpec",
    "BeakerSpec",
    "CameraSpec",
    "ExpectedSpec",
    "FAULT_KINDS",
    "FaultSpec",
    "IndicatorSpec",
    "LAYOUT_KINDS",
    "LayoutItemSpec",
    "LayoutSpec",
    "PipetteSpec",
    "ProbeSpec",
    "ElectrodeCalibrationSpec",
    "RobotSpec",
    "Scenario",
    "ScenarioError",
    "StirrerSpec",
    "WeighingSpec",
    "load_scenario",
    "read_scenario_yaml",
    "scenario_from_dict",
]

FAULT_KINDS = (
    "ph_dropout",
    "ph_stuck",
    "drop_fails",
    "extra_drop",
    "noise_burst",
    "gripper_stall",
    "labware_missing",
    "labware_moved",
)
#: The bench's labware kinds (agentchemist.workcell.labware), by their bench names.
LAYOUT_KINDS = tuple(k.name for k in LABWARE_KINDS)
Side = Literal["left", "right"]


def _canonical_reagent(name: str) -> str:
    try:
        return default_library().get(name).name
    except UnknownReagentError as exc:
        raise ValueError(str(exc)) from None


def _check_concentrations(value: Mapping[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, conc in value.items():
        canonical = _canonical_reagent(name)
        if not (isinstance(conc, (int, float)) and math.isfinite(conc) and conc > 0):
            raise ValueError(f"concentration of {name!r} must be a finite number > 0 mol/L, got {conc!r}")
        if canonical in out:
            raise ValueError(f"reagent {canonical!r} given twice (as {name!r} and another alias)")
        out[canonical] = float(conc)
    return out


#: reagent -> mol/L, keyed by the canonical reagent name (aliases resolved, each reagent once)
Concentrations = Annotated[dict[str, float], AfterValidator(_check_concentrations)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class IndicatorSpec(_Model):
    """A colour indicator dissolved in the beaker (name from :mod:`agentchemist.sim.indicators`)."""

    name: str
    conc_M: float = Field(gt=0, le=0.01, description="indicator concentration in the beaker (mol/L)")

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        return indicator_for(v).name


class BeakerSpec(_Model):
    """The working beaker: capacity, initial volume and composition (reagent -> mol/L)."""

    id: str = "beaker_main"
    capacity_ml: float = Field(gt=0, le=5000)
    volume_ml: float = Field(ge=0)
    solution: Concentrations = Field(default_factory=dict)
    indicator: IndicatorSpec | None = None
    glass_mass_g: float = Field(default=48.0, gt=0, description="empty beaker mass (g), for the balance")
    density_g_ml: float = Field(default=1.0, gt=0.5, lt=2.0, description="solution density (g/mL)")

    @model_validator(mode="after")
    def _fits(self) -> "BeakerSpec":
        if self.volume_ml > self.capacity_ml:
            raise ValueError(f"volume_ml {self.volume_ml} exceeds capacity_ml {self.capacity_ml}")
        return self


class PipetteSpec(_Model):
    """Rubber-bulb dropping pipette squeezed by a gripper.

    Expelled volume = ``k_ml_per_mm`` * d * (1 + ``nonlinearity`` * d / ``contact_opening_mm``),
    d = ``contact_opening_mm`` - gripper opening (mm), d >= 0. ``drop_volume_sd`` is ABSOLUTE (mL),
    the standard deviation of a single drop's volume about ``drop_volume_ml``.
    """

    id: str = "pipette"
    capacity_ml: float = Field(default=60.0, gt=0)
    drop_volume_ml: float = Field(default=0.046875, gt=0, le=1.0)
    drop_volume_sd: float = Field(default=0.0015, ge=0, description="absolute sd of a drop's volume (mL)")
    k_ml_per_mm: float = Field(default=1.0, gt=0, description="expelled volume per mm of squeeze (mL/mm)")
    contact_opening_mm: float = Field(default=60.0, gt=0, le=70.0, description="opening where jaws meet the bulb")
    nonlinearity: float = Field(default=0.0, ge=-0.5, le=0.5)
    formation_delay_s: float = Field(default=0.02, ge=0, le=2.0, description="neck pinch-off time (s)")
    fall_height_m: float = Field(default=0.05, gt=0, le=1.0, description="tip height above the liquid (m)")
    drawn_ml: float = Field(default=0.0, ge=0)
    drawn_reagent: str | None = None
    held_by: Side = "right"
    grasped: bool = False
    grasp_tolerance_mm: float = Field(default=2.0, gt=0, le=10.0)

    @field_validator("drawn_reagent")
    @classmethod
    def _reagent(cls, v: str | None) -> str | None:
        return None if v is None else _canonical_reagent(v)

    @model_validator(mode="after")
    def _fits(self) -> "PipetteSpec":
        if self.drawn_ml > self.capacity_ml:
            raise ValueError(f"drawn_ml {self.drawn_ml} exceeds capacity_ml {self.capacity_ml}")
        if self.drawn_ml > 0 and self.drawn_reagent is None:
            raise ValueError("drawn_ml > 0 needs drawn_reagent (what is in the pipette)")
        return self


class ProbeSpec(_Model):
    """pH electrode: first-order response, Gaussian noise, calibration offset and slow drift."""

    id: str = "ph_probe"
    tau_s: float = Field(default=2.0, gt=0, le=600)
    noise_sd: float = Field(default=0.005, ge=0, le=1.0)
    offset: float = Field(default=0.0, ge=-2.0, le=2.0)
    drift_per_h: float = Field(default=0.0, ge=-1.0, le=1.0)
    slope_pct: float = Field(default=100.0, ge=80.0, le=110.0,
                             description="the electrode's slope as a percentage of Nernst (an ageing one: 95-99)")
    temperature_c: float = Field(default=25.0, ge=0.0, le=80.0)
    temperature_noise_sd: float = Field(default=0.02, ge=0, le=2.0)
    min_immersion_ml: float = Field(default=5.0, ge=0, description="liquid needed to cover the junction")
    activity: bool = Field(default=True, description="pH as -log10 a(H+) (Davies), as a glass electrode reads")


class ElectrodeCalibrationSpec(_Model):
    """The electrode's buffer calibration before the run (the pH meter corrects every reading with it):
    fresh (made just before the run, in the twin's buffers, with the probe's offset, slope, drift and
    noise), stale (made `age_h` hours ago, older than the meter accepts) or missing."""

    state: Literal["fresh", "stale", "missing"] = "fresh"
    age_h: float = Field(default=48.0, ge=0.0, le=8760.0, description="age of a stale calibration (h)")
    buffers: tuple[float, ...] = Field(default=(4.01, 7.00, 10.01), min_length=2, max_length=3)


class BalanceSpec(_Model):
    """Top-loading balance: readability, capacity, first-order settling, noise."""

    id: str = "balance"
    resolution_g: float = Field(default=0.01, gt=0, le=1.0)
    capacity_g: float = Field(default=220.0, gt=0)
    settle_tau_s: float = Field(default=0.8, gt=0, le=60.0)
    noise_sd_g: float = Field(default=0.002, ge=0, le=1.0)


class StirrerSpec(_Model):
    """Magnetic stirrer: on/off and the mixing time constant seen by the probe."""

    id: str = "stirrer"
    on: bool = True
    mixing_tau_s: float = Field(default=1.0, gt=0, le=600)
    unstirred_mixing_tau_s: float = Field(default=20.0, gt=0, le=6000)
    rpm: float = Field(default=400.0, ge=0, le=2000)


class AudioSpec(_Model):
    """Contact-microphone synthesis; ``synth`` passes extra ContactAudioConfig fields through."""

    sample_rate: int = Field(default=48000, ge=16000, le=192000)
    snr_db: float = Field(default=20.0, ge=-20, le=80)
    synth: dict[str, Any] = Field(default_factory=dict)

    @field_validator("synth")
    @classmethod
    def _synth_keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        import dataclasses

        from agentchemist.sim.audio import AudioSynthError, ContactAudioConfig

        owned = {"sample_rate", "snr_db", "stirrer_on", "seed"}  # set from the scenario itself
        allowed = sorted({f.name for f in dataclasses.fields(ContactAudioConfig)} - owned)
        for key in v:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {allowed}"
                raise ValueError(f"unknown synth key {key!r}{hint}")
        try:
            ContactAudioConfig(**v)
        except (AudioSynthError, TypeError) as exc:
            raise ValueError(str(exc)) from None
        return v


class CameraSpec(_Model):
    width: int = Field(default=320, ge=160, le=1920)
    height: int = Field(default=240, ge=120, le=1080)
    rate_hz: float = Field(default=2.0, gt=0, le=60)
    noise_sd: float = Field(default=2.0, ge=0, le=30, description="sensor noise (grey levels)")

    @model_validator(mode="after")
    def _aspect(self) -> "CameraSpec":
        if abs(self.width / self.height - 4 / 3) > 0.01:
            raise ValueError(f"width x height must be 4:3 (the bench drawing is laid out for it), got {self.width}x{self.height}")
        return self


class LayoutItemSpec(_Model):
    """A labware item: id, kind, presence and where its base centre is in the front image (px)."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: Literal[LAYOUT_KINDS]  # type: ignore[valid-type]
    present: bool = True
    position: tuple[float, float]
    on: str | None = None
    marker_id: int | None = Field(default=None, ge=0, le=49)
    label: str = ""
    capacity_ml: float | None = Field(default=None, gt=0)
    mass_g: float = Field(default=0.0, ge=0, description="mass when put on the balance (g)")


class LayoutSpec(_Model):
    items: list[LayoutItemSpec]
    clutter: list[LayoutItemSpec] = Field(default_factory=list)


class FaultSpec(_Model):
    """A fault that fires at ``at_s`` (sim time) and lasts ``duration_s`` (0 = one-shot / permanent)."""

    kind: Literal[FAULT_KINDS]  # type: ignore[valid-type]
    at_s: float = Field(ge=0)
    duration_s: float = Field(default=0.0, ge=0)
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _params(self) -> "FaultSpec":
        allowed = {
            "labware_missing": {"id"},
            "labware_moved": {"id", "position", "offset"},
            "gripper_stall": {"side"},
            "noise_burst": {"side"},
            "drop_fails": {"count"},
            "extra_drop": {"volume_ml"},
            "ph_stuck": {"value"},
        }.get(self.kind, set())
        unknown = sorted(set(self.params) - allowed)
        if unknown:
            raise ValueError(f"{self.kind} does not take param(s) {unknown}; allowed: {sorted(allowed) or 'none'}")
        if self.kind in ("labware_missing", "labware_moved") and "id" not in self.params:
            raise ValueError(f"{self.kind} needs params.id (the labware id)")
        if self.kind == "labware_moved" and not ({"position", "offset"} & set(self.params)):
            raise ValueError("labware_moved needs params.position [u, v] or params.offset [du, dv] (px)")
        if self.kind == "drop_fails" and not (isinstance(self.params.get("count", 1), int) and self.params.get("count", 1) >= 1):
            raise ValueError(f"drop_fails params.count must be an int >= 1, got {self.params.get('count')!r}")
        if self.kind == "extra_drop" and "volume_ml" in self.params:
            v = self.params["volume_ml"]
            if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 < v <= 1.0):
                raise ValueError(f"extra_drop params.volume_ml must be in (0, 1] mL, got {v!r}")
        for key in ("position", "offset"):
            if key in self.params:
                v = self.params[key]
                if not (isinstance(v, (list, tuple)) and len(v) == 2
                        and all(isinstance(x, (int, float)) and math.isfinite(x) for x in v)):
                    raise ValueError(f"params.{key} must be two finite numbers [u, v] (px), got {v!r}")
        if self.kind in ("noise_burst",) and self.duration_s > 60:
            raise ValueError(f"noise_burst duration_s must be <= 60 s, got {self.duration_s}")
        if "side" in self.params and self.params["side"] not in ("left", "right"):
            raise ValueError(f"params.side must be 'left' or 'right', got {self.params['side']!r}")
        return self


class ExpectedSpec(_Model):
    """What a correct system does with this scenario (graded by tests and benchmarks)."""

    outcome: Literal["complete", "refuse", "ask", "abort"] = Field(description=(
        "abort: the plan is accepted and the run must halt (a bench that contradicts the plan, seen only "
        "while dispensing: expected.anomalies names the halting kind)"))
    reason: str | None = None
    target_ph: float | None = Field(default=None, ge=0, le=14)
    target_mass_g: float | None = Field(default=None, gt=0)
    missing: list[str] = Field(default_factory=list)
    anomalies: list[str] = Field(
        default_factory=list,
        description="anomaly kinds (Anomaly.kind) the system must raise for the injected faults, in fault order; "
                    "empty = a clean run, where any warn or halt anomaly is a false alarm")


class RobotSpec(_Model):
    """Kinematic arm/gripper follow parameters (until a physics backend replaces them)."""

    gripper_tau_s: float = Field(default=0.05, gt=0, le=5)
    gripper_max_speed_m_s: float = Field(default=0.05, gt=0, le=1)
    arm_tau_s: float = Field(default=0.3, gt=0, le=10)
    initial_gripper_opening_m: float = Field(default=0.07, ge=0, le=0.07)
    initial_arm_rad: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


class WeighingSpec(_Model):
    """Solid pouring from a bottle onto the balance, and dissolution in the target vessel."""

    bottle_id: str = "solid_bottle"
    reagent: str
    bottle_content_g: float = Field(gt=0)
    held_by: Side = "left"
    target: str = "beaker_main"
    threshold_deg: float = Field(default=35.0, gt=0, lt=90)
    empty_extra_deg: float = Field(default=40.0, ge=0, lt=90)
    max_tilt_deg: float = Field(default=130.0, gt=0, le=180)
    flow_g_s: float = Field(default=1.5, gt=0, description="flow at full pour (tilt = threshold + 30 deg)")
    flow_cv: float = Field(default=0.35, ge=0, le=2, description="relative flow fluctuation per 50 ms")
    dissolution_time_stirred_s: float = Field(default=30.0, gt=0)
    dissolution_time_unstirred_s: float = Field(default=600.0, gt=0)
    solubility_g_l: float = Field(default=360.0, gt=0)

    @field_validator("reagent")
    @classmethod
    def _reagent(cls, v: str) -> str:
        return _canonical_reagent(v)


class Scenario(_Model):
    """A complete twin scenario (see the module docstring)."""

    name: str = Field(min_length=1)
    description: str = ""
    seed: int = Field(ge=0)
    instruction: str = Field(min_length=1)
    beaker: BeakerSpec
    titrant: Concentrations = Field(default_factory=dict)
    inventory: dict[str, Any] = Field(default_factory=dict, description=(
        "what the lab BELIEVES the tagged containers hold (config/inventory.yaml's items: labware id or tag "
        "id -> reagent, concentration, unit, lot, prepared); replaces the default inventory's and the bottle "
        "labels' entries. `titrant` and `beaker.solution` are what is really in them (a mislabelled bottle)"))
    pipette: PipetteSpec = PipetteSpec()
    probe: ProbeSpec = ProbeSpec()
    electrode_calibration: ElectrodeCalibrationSpec = ElectrodeCalibrationSpec()
    balance: BalanceSpec = BalanceSpec()
    stirrer: StirrerSpec = StirrerSpec()
    audio: AudioSpec = AudioSpec()
    cameras: CameraSpec = CameraSpec()
    robot: RobotSpec = RobotSpec()
    layout: LayoutSpec
    weighing: WeighingSpec | None = None
    faults: list[FaultSpec] = Field(default_factory=list)
    expected: ExpectedSpec
    real_time_factor: float = Field(default=50.0, gt=0, le=10000)
    arm_backend: Literal["kinematic", "mujoco"] = Field(
        default="kinematic", description="who moves the arms and draws the cameras (lab_sim's arm_backend "
                                         "parameter, when set, wins): the twin's kinematics or MuJoCo physics")
    repeat: int = Field(default=1, ge=1, le=500,
                        description="experiments run back to back, each on a fresh sample (long runs)")

    @field_validator("inventory")
    @classmethod
    def _inventory(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            inventory_from_dict({"items": v}, "inventory")
        except InventoryError as exc:
            raise ValueError(str(exc)) from None
        return v

    @model_validator(mode="after")
    def _cross_refs(self) -> "Scenario":
        if self.expected.outcome == "abort" and not self.faults and len(self.expected.anomalies) != 1:
            raise ValueError("expected.outcome abort without a twin fault: give the halting anomaly kind "
                             "as expected.anomalies [kind] (the bench itself is the fault)")
        if self.expected.anomalies and self.faults and len(self.expected.anomalies) != len(self.faults):
            raise ValueError(f"expected.anomalies lists {len(self.expected.anomalies)} kind(s) for "
                             f"{len(self.faults)} fault(s): give one anomaly kind per fault, in fault order")
        items = [*self.layout.items, *self.layout.clutter]
        ids = [it.id for it in items]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"layout: duplicate item id(s) {dupes}")
        known = set(ids)
        w, h = self.cameras.width, self.cameras.height
        markers: dict[int, str] = {}
        for it in items:
            u, v = it.position
            if not (0 <= u < w and 0 <= v < h):
                raise ValueError(f"layout: {it.id}.position {it.position} is outside the {w}x{h} front image")
            if it.on is not None and it.on not in known:
                raise ValueError(f"layout: {it.id}.on names {it.on!r}, which is not in the layout")
            mid = it.marker_id if it.marker_id is not None else default_marker_id(it.id)
            if mid is None:
                raise ValueError(
                    f"layout: {it.id} is not in the marker table (agentchemist/workcell/tags.py); give marker_id in {FREE_IDS.start}..{FREE_IDS.stop - 1}"
                )
            if mid in markers:
                raise ValueError(f"layout: marker id {mid} used by both {markers[mid]} and {it.id}")
            markers[mid] = it.id
        roles = [("beaker", self.beaker.id), ("stirrer", self.stirrer.id)]
        if self.titrant:  # a titration needs the pipette and the probe in the layout (present or not)
            roles += [("pipette", self.pipette.id), ("probe", self.probe.id)]
        for role, item_id in roles:
            if item_id not in known:
                raise ValueError(f"{role}.id {item_id!r} has no layout item (add it, with present: false if missing)")
        if self.weighing is not None:
            if self.weighing.target != self.beaker.id:
                raise ValueError(f"weighing.target {self.weighing.target!r} must be the working beaker {self.beaker.id!r}")
            for key in ("bottle_id", "target"):
                ref = getattr(self.weighing, key)
                if ref not in known:
                    raise ValueError(f"weighing.{key} {ref!r} has no layout item")
            if self.balance.id not in known:
                raise ValueError(f"balance.id {self.balance.id!r} has no layout item")
        for n, fault in enumerate(self.faults):
            target = fault.params.get("id")
            if target is not None and target not in known:
                close = difflib.get_close_matches(str(target), sorted(known), n=3)
                hint = f"; did you mean {close}?" if close else ""
                raise ValueError(f"faults[{n}].params.id {target!r} is not a layout item{hint}")
        if self.pipette.drawn_reagent is not None and self.titrant and self.pipette.drawn_reagent not in self.titrant:
            raise ValueError(f"pipette.drawn_reagent {self.pipette.drawn_reagent!r} is not in titrant {sorted(self.titrant)}")
        return self

    def all_items(self) -> list[LayoutItemSpec]:
        """Layout items followed by clutter items."""
        return [*self.layout.items, *self.layout.clutter]


# --------------------------------------------------------------------------------------------------------
# loading and error formatting


def _model_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model reached by ``loc`` (for 'did you mean' on a typo'd key)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        ann = field.annotation
        current = None
        for cand in (ann, *getattr(ann, "__args__", ())):
            for sub in (cand, *getattr(cand, "__args__", ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    current = sub
    return list(getattr(current, "model_fields", {}))


def _format_errors(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        path = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc).replace(".[", "[")
        kind = err.get("type", "")
        msg = str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if kind == "extra_forbidden":
            allowed = _model_fields(Scenario, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
            msg = "unknown key" + (f" (did you mean {close[0]!r}?)" if close else f"; allowed keys: {allowed}")
        elif kind == "missing":
            msg = "required key is missing"
        elif "input" in err and kind not in ("model_type", "dict_type"):
            shown = repr(err["input"])
            if len(shown) < 60:
                msg = f"{msg} (got {shown})"
        problems.append((path, msg))
    return problems


class _Yaml12BoolLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false are booleans, so ``on:`` stays a key."""


_Yaml12BoolLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12BoolLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def scenario_from_dict(data: Mapping[str, Any], source: str = "<dict>") -> Scenario:
    """Validate a scenario given as a mapping; ScenarioError names ``source``, key path and problem."""
    if not isinstance(data, Mapping):
        raise ScenarioError(source, [("", f"expected a mapping at the top level, got {type(data).__name__}")])
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as exc:
        raise ScenarioError(source, _format_errors(exc)) from None


def read_scenario_yaml(path: str | Path) -> Any:
    """The parsed YAML of a scenario file, unvalidated (YAML 1.2 booleans: ``on:`` stays a key)."""
    file = Path(path)
    try:
        text = read_text(file)
    except OSError as exc:
        raise ScenarioError(str(file), [("", f"cannot read file: {exc.strerror or exc}")]) from None
    except InputLimitError as exc:
        raise ScenarioError(str(file), [("", str(exc))]) from None
    try:
        # Limits first (size, depth, aliases): a 3 kB alias bomb is refused before it is expanded.
        data = load_yaml(text, str(file), loader=_Yaml12BoolLoader)
    except InputLimitError as exc:
        raise ScenarioError(str(file), [("", str(exc))]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError(str(file), [("", f"invalid YAML: {exc}")]) from None
    return data if data is not None else {}


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate a scenario YAML file."""
    return scenario_from_dict(read_scenario_yaml(path), source=str(Path(path)))


def indicator_names() -> list[str]:
    """Indicator names a scenario may use in ``beaker.indicator.name``."""
    return sorted(INDICATORS)
