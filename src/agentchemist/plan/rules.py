"""The rule-based planner backend (the embedded default): parse, pick the protocol, fill it.

``RulesBackend().propose(text, scene, protocol_hint)`` returns a raw plan dict (validated by the
caller), or ``{"question": ...}`` when something essential is missing or unknown, or
``{"refusal": ..., "reasons": [...]}`` when the instruction cannot be an experiment we run.
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np
from typing import Any

from agentchemist.control.calibration import CalibrationError, load_or_none
from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import Reagent, ReagentLibrary, default_library
from agentchemist.plan.alternatives import BenchOffer
from agentchemist.plan.feasibility import (
    InfeasibleTargetError,
    complexometric_equivalence_ml,
    equivalence_point,
    titrant_for_ph,
)
from agentchemist.plan.parse import InstructionParse, ReagentParse, parse_instruction
from agentchemist.plan.protocols import ProtocolLibrary
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.roles import assign_roles, detect_family
from agentchemist.plan.parse_text import vessel_location
from agentchemist.plan.scene import INSTRUMENT_DISPLAY, SceneInfo
from agentchemist.plan.wording import experiment_request

__all__ = ["PlanningData", "RulesBackend", "experiment_id_for"]

DEFAULT_ANALYTE_ML = 25.0
# Default endpoint colours per indicator (complex -> free indicator at the working pH).
_INDICATOR_COLOURS = {"calconcarboxylic_acid": ("magenta", "blue")}
_FAMILY_RECORDING = {
    "acid_base_titration": ["ph_per_drop", "titrant_volume_per_drop"],
    "complexometric_titration": ["titrant_volume_per_drop", "colour_per_drop"],
    "weighing_dissolution": ["mass_per_tap", "final_mass"],
}
_FAMILY_LABEL = {
    "acid_base_titration": "acid-base titration",
    "complexometric_titration": "complexometric titration",
    "weighing_dissolution": "weighing and dissolution",
}


class _Stop(Exception):
    """Internal: planning stops with a question or a refusal (the payload dict)."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload
        super().__init__(payload.get("question") or payload.get("refusal"))


def experiment_id_for(text: str) -> str:
    """A deterministic id from the instruction text (no clock): 'exp-' + 12 hex digits."""
    return "exp-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


def _ask(*questions: str) -> _Stop:
    return _Stop({"question": " ".join(questions), "reasons": list(questions)})


def _refuse(*reasons: str) -> _Stop:
    return _Stop({"refusal": "; ".join(reasons), "reasons": list(reasons)})


def _hazard_notes(reagents: list[ReagentParse]) -> list[str]:
    """The reagent registry's handling note for each reagent at or above its hazard concentration."""
    out = []
    for r in reagents:
        hazard = r.reagent.hazard
        if hazard is not None and r.concentration_m is not None and r.concentration_m >= hazard.above_m:
            out.append(f"hazard: {r.concentration_m:g} M {r.reagent.display_name}: {hazard.note}")
    return out


def _calibrated_drop(ctx: dict[str, Any], warnings: list[str]) -> None:
    """The drop volume the dispenser and audio supervisor will use: the pipette calibration they load
    (the user's store, else the shipped file), so the plan and its report state what the nodes used."""
    try:
        cal = load_or_none(None)
    except CalibrationError as exc:
        warnings.append(f"pipette calibration unreadable ({exc}): the protocol's default drop volume is planned")
        return
    if cal is not None:
        ctx["drop_volume_ml"] = round(cal.drop_volume_ml, 6)


def _ask_about_leftovers(volumes: list, text: str) -> None:
    """A volume the plan would not use ("... and dispense 5 L") is asked about, never dropped."""
    if not volumes:
        return
    def phrase(q) -> str:
        words = re.findall(r"[\w.]+", text[: q.start])[-2:]  # "dispense 5 L": the verb with the amount
        return " ".join([*words, q.text.strip()])

    said = ", ".join(repr(phrase(q)) for q in volumes)
    raise _ask(f"The instruction also names {said}, which this plan would not use or dispense (a titration "
               "adds titrant drop by drop until its target). What is it for? Leave it out to plan the titration alone.")


def _equivalents(r: Reagent) -> int:
    """Protons given or taken per formula unit (what normality counts)."""
    if r.kind in ("strong_acid", "weak_acid"):
        return max(r.strong_protons, 0) + r.protons_as_added
    if r.kind in ("strong_base", "weak_base"):
        return max(-r.strong_protons, 0) + (len(r.pka) - r.protons_as_added)
    return 0


def _the_unknown(
    parse: InstructionParse, analyte: ReagentParse, titrant: ReagentParse, warnings: list[str]
) -> ReagentParse | None:
    """In a determination or standardisation the one concentration not given is what the run measures:
    give it a planning estimate (equivalence near one analyte volume of titrant, by equivalents) so the
    feasibility and volume checks have a number, and mark it unknown. None when nothing is unknown."""
    if not (parse.determination or parse.standardisation):
        return None
    missing = [r for r in (analyte, titrant) if r.concentration_m is None]
    if len(missing) != 1:
        return None  # both missing: the titrant's concentration is still asked for
    unknown = missing[0]
    known = titrant if unknown is analyte else analyte
    if parse.family == "complexometric_titration":
        ratio = 1.0  # EDTA binds calcium 1:1
    else:
        ratio = max(_equivalents(known.reagent), 1) / max(_equivalents(unknown.reagent), 1)
    unknown.concentration_m = round(known.concentration_m * ratio, 6)
    unknown.unknown = True
    what = "the result of this determination" if unknown is analyte else "what this standardisation measures"
    warnings.append(
        f"the {unknown.reagent.display_name} concentration is unknown ({what}): planned with an estimate of "
        f"{unknown.concentration_m:g} M; the analysis reports the measured value"
    )
    return unknown


def _conc_text(r: ReagentParse) -> str:
    if r.unknown:
        return f"{r.reagent.display_name} of unknown concentration"
    return f"{r.concentration_m:g} M {r.reagent.display_name}" if r.concentration_m else r.reagent.display_name


class PlanningData:
    """The reagent library, protocol library and hardware registry a planner works from; each one not
    given is loaded from the shipped files, once (the planner and its rule backend share them)."""

    def __init__(
        self,
        library: ReagentLibrary | None = None,
        protocols: ProtocolLibrary | None = None,
        registry: HardwareRegistry | None = None,
    ) -> None:
        self.library = library if library is not None else default_library()
        self.protocols = protocols if protocols is not None else ProtocolLibrary.load()
        self.registry = registry if registry is not None else HardwareRegistry.load()


class RulesBackend(PlanningData):
    """Keyword and pattern parser + protocol library. Deterministic; no model, no network."""

    name = "rules"

    # -- PlannerBackend ---------------------------------------------------------------------------
    def propose(self, text: str, scene: SceneInfo | None, protocol_hint: dict[str, Any] | None) -> dict[str, Any]:
        try:
            return self._plan(text, scene)
        except _Stop as stop:
            return stop.payload

    # -- steps ------------------------------------------------------------------------------------
    def _plan(self, text: str, scene: SceneInfo | None) -> dict[str, Any]:
        parse = parse_instruction(text, self.library)
        if parse.refusals:
            raise _refuse(*parse.refusals)
        family = detect_family(parse)
        if parse.refusals:
            raise _refuse(*parse.refusals)
        if family is None:
            if parse.questions:
                raise _ask(*parse.questions)
            kind = experiment_request(parse.text)
            if kind == "titration":
                raise _ask(
                    "Which solution should be titrated (its volume and concentration), with which titrant (and its "
                    "concentration), and what should end the titration (a target pH or the equivalence point)?"
                )
            if kind == "weighing":
                raise _ask("Which solid should be weighed, how much (e.g. '2.50 g of sodium chloride'), and in "
                           "how much water should it be dissolved?")
            raise _refuse(
                "this is not an experiment the protocol library covers (acid-base titration, complexometric "
                "Ca/EDTA titration, weighing and dissolution)"
            )
        if parse.questions:  # unknown reagents first: roles built on a misread reagent are noise
            raise _ask(*parse.questions)
        assign_roles(parse, family)
        if parse.questions:
            raise _ask(*parse.questions)
        parse.family = family
        warnings = list(parse.warnings)
        if family == "weighing_dissolution":
            ctx, reagents, objects = self._weighing(parse, scene, warnings)
        else:
            ctx, reagents, objects = self._titration(parse, scene, warnings)
        proto = self.protocols.for_family(family)
        if family != "weighing_dissolution":
            _calibrated_drop(ctx, warnings)
        ctx["output_format"] = ["report"] + [o for o in parse.output_format if o != "report"]
        filled = proto.fill(ctx)
        # The protocol's instruments, the alternatives chosen (a spatula or the solid's bottle ...), and
        # any other registry instrument the instruction names; an unchosen alternative is not required.
        chosen = list(ctx.get("alternative_instruments", []))
        instruments = list(dict.fromkeys([*proto.required_instruments, *chosen]))
        instruments += [
            i
            for i in parse.instruments
            if i not in instruments and i in self.registry.instrument_kinds and i not in proto.alternative_instruments()
        ]
        for inst in parse.instruments:
            if inst not in instruments:
                warnings.append(f"the instruction mentions a {inst.replace('_', ' ')}, which this plan does not use")
        recording = _FAMILY_RECORDING[family] + [d for d in parse.data_recording if d not in _FAMILY_RECORDING[family]]
        return {
            "experiment_id": experiment_id_for(parse.text),
            "protocol": {"id": proto.id, "version": proto.version},
            "parsed_instruction": {
                "experiment_name": filled["experiment_name"],
                "family": family,
                "entities": {"instruments": instruments, "reagents": reagents, "objects": objects},
                "initial_conditions": ctx["initial_conditions"],
                "target_conditions": ctx["target_conditions"],
                "operation_intent": ctx["operation_intent"],
                "data_recording": recording,
                "output_format": ctx["output_format"],
                "operation_primitives": filled["operation_primitives"],
            },
            "environment_check": {"satisfied": True, "missing_objects": [], "user_feedback": ""},
            "state_machine": filled["state_machine"],
            "task_decomposition": filled["task_decomposition"],
            "module_instantiation": filled["module_instantiation"],
            "warnings": warnings,
        }

    def _past_equivalence(
        self, a: dict, va: float, t: dict, titrant: ReagentParse, eq_ph: float, warnings: list[str]
    ) -> float:
        """Where a determination stops: its equivalence pH comes from an estimate, and the analysis needs
        the jump and the points after it, so the run goes 1.5 pH units past the estimated equivalence
        (toward the titrant's side) when the titrant reaches that within one draw; else to the estimate."""
        up = titrant.reagent.kind in ("strong_base", "weak_base")
        target = round(eq_ph + (1.5 if up else -1.5), 2)
        limit = min(self.registry.pipette_capacity_ml, self.registry.max_titrant_ml)
        try:
            need = titrant_for_ph(a, va, t, target, self.library, activity=self.registry.ph_reads_activity).volume_ml
        except InfeasibleTargetError:
            need = math.inf
        if need > limit / 1.5:  # room for an analyte up to 1.5x the estimate
            return round(eq_ph, 2)
        try:
            ratio = limit / equivalence_point(a, va, t, self.library).volume_ml
        except InfeasibleTargetError:
            ratio = math.nan
        warnings.append(f"a determination: the run stops at pH {target:g}, past the estimated equivalence pH "
                        f"{eq_ph:.2f}, so that the jump is recorded; one {limit:g} mL draw reaches the equivalence "
                        f"of up to about {ratio:.1f}x the estimated concentration")
        return target

    def _meter_range(self, a: dict, va: float, t: dict) -> list[str]:
        """A word when the pH the run starts at lies outside the pH meter's range (hardware registry)."""
        lo, hi = self.registry.ph_range
        try:
            (start,) = titration_curve(a, va, t, np.array([0.0]), activity=self.registry.ph_reads_activity,
                                       library=self.library)
        except (ValueError, ArithmeticError):
            return []
        if lo <= start <= hi:
            return []
        return [f"the solution starts at about pH {start:.1f}, outside the pH meter's range {lo:g}-{hi:g}: the first "
                "readings are at the meter's limit and are not evidence of the pH (dilute the sample to see the "
                "whole curve)"]

    def _beaker(
        self,
        parse: InstructionParse,
        scene: SceneInfo | None,
        holds: str | None,
        warnings: list[str],
        volume_ml: float | None = None,
    ) -> tuple[str, str]:
        """(scene id or kind of the beaker, registry beaker kind). ``holds``: the reagent the beaker is
        said to hold; ``volume_ml``: what must fit in it."""
        reg = self.registry
        if scene is not None:
            beakers = [o for o in scene.objects if o.kind in reg.kinds_for("beaker") or o.kind in reg.beakers]
            beakers, note = self._resolve_beaker(parse, scene, beakers, holds, volume_ml)
            if len(beakers) == 1:
                # its size: as the scene shows it, else as the instruction states it, else the default
                cap = self._known_capacity(beakers[0])
                if cap is None and parse.container_capacity_ml is not None:
                    cap = parse.container_capacity_ml
                kind = reg.beaker_for_capacity(cap if cap is not None else self._capacity(beakers[0]))
                if kind is None:
                    raise _refuse(f"beaker {beakers[0].id!r} ({cap:g} mL) is not in the hardware registry")
                if cap is None:
                    warnings.append(f"the scene does not give the size of {beakers[0].id}: assuming {kind}")
                return beakers[0].id, kind
            if len(beakers) > 1:
                options = ", ".join(self._beaker_text(o) for o in beakers)
                raise _ask(f"Which beaker should be used: {options}?" + note)
        if parse.container_capacity_ml is not None:
            kind = reg.beaker_for_capacity(parse.container_capacity_ml)
            if kind is None:
                raise _refuse(
                    f"there is no {parse.container_capacity_ml:g} mL beaker in the hardware registry "
                    f"(known: {', '.join(sorted(reg.beakers))})"
                )
            return kind, kind
        if volume_ml is None:
            warnings.append(f"beaker size not stated: assuming {reg.default_beaker}")
            return reg.default_beaker, reg.default_beaker
        by_size = sorted(reg.beakers, key=lambda k: reg.beakers[k])
        fits = [k for k in by_size if reg.beaker_room_ml(k) >= volume_ml]
        kind = fits[0] if fits else by_size[-1]
        warnings.append(f"beaker size not stated: using {kind} for about {volume_ml:.0f} mL of liquid")
        return kind, kind

    def _resolve_beaker(
        self,
        parse: InstructionParse,
        scene: SceneInfo,
        beakers: list[Any],
        holds: str | None,
        volume_ml: float | None,
    ) -> tuple[list[Any], str]:
        """Narrow the scene's beakers to the one the instruction means, from what it says and what the
        scene shows: its id, what it holds, its size, where it stands, whether the liquid fits. Each cue
        narrows only when it leaves a candidate (a cue the scene cannot check is skipped, not guessed).
        Returns the candidates left and, when several are, a sentence for the question saying why."""
        named = [o for o in beakers if re.search(rf"(?<![\w-]){re.escape(o.id)}(?![\w-])", parse.text, re.I)]
        if len(named) == 1:
            return named, ""
        if holds is not None:
            holding = [o for o in scene.holding(holds, self.library) if o in beakers]
            if len(holding) == 1:
                return holding, ""
            beakers = holding or beakers
        if parse.container_capacity_ml is not None:
            cap = parse.container_capacity_ml
            known = [o for o in beakers if self._known_capacity(o) is not None]
            sized = [o for o in known if abs(self._known_capacity(o) - cap) <= 0.5]
            # a beaker of unknown size may be the one; one of another known size is not
            beakers = sized or [o for o in beakers if o not in known] or beakers
        note = ""
        places = vessel_location(parse.text)
        if len(beakers) > 1 and len(places) == 1:
            platform_kinds = {k for inst in ("magnetic_stirrer", "balance") for k in self.registry.kinds_for(inst)}
            platforms = [o for o in scene.objects if o.kind in platform_kinds]
            wanted = {o.id for o in platforms if o.kind in self.registry.kinds_for(places[0])}
            where = INSTRUMENT_DISPLAY.get(places[0], places[0].replace("_", " "))
            on = [o for o in beakers if scene.knows_support(o) and self._support_id(scene, o, platforms) in wanted]
            unknown = [o for o in beakers if not scene.knows_support(o)]
            if on:
                beakers = on + unknown
                if len(beakers) > 1:
                    note = (
                        f" The scene does not show where {', '.join(o.id for o in unknown)} stand."
                        if unknown
                        else f" Several stand on the {where}."
                    )
            elif not wanted:
                note = f" The scene shows no {where}."
            elif not unknown:
                note = f" None of them is seen on the {where}."
            else:
                note = f" The scene does not show which one stands on the {where}."
        if len(beakers) > 1 and volume_ml is not None:
            fit = [
                o
                for o in beakers
                if self._known_capacity(o) is None
                or self._known_capacity(o) * self.registry.max_fill_fraction >= volume_ml
            ]
            beakers = fit or beakers
        return beakers, note

    @staticmethod
    def _support_id(scene: SceneInfo, obj: Any, platforms: list[Any]) -> str | None:
        support = scene.standing_on(obj, platforms)
        return support.id if support is not None else None

    def _beaker_text(self, obj: Any) -> str:
        cap = self._known_capacity(obj)
        return f"{obj.id} ({cap:g} mL)" if cap is not None else f"{obj.id} (size not seen)"

    def _known_capacity(self, obj: Any) -> float | None:
        """The capacity the scene gives (its own or by a sized kind such as beaker_250ml), else None."""
        if obj.capacity_ml is not None:
            return float(obj.capacity_ml)
        return self.registry.beakers.get(obj.kind)

    def _capacity(self, obj: Any) -> float:
        known = self._known_capacity(obj)
        return known if known is not None else self.registry.beakers[self.registry.default_beaker]

    def _scene_id(self, scene: SceneInfo | None, instrument: str, default: str) -> str:
        if scene is None:
            return default
        found = scene.of_kinds(self.registry.kinds_for(instrument))
        return found[0].id if found else default

    def _molar(self, r: ReagentParse, warnings: list[str]) -> None:
        if r.concentration_m is None or not r.normality:
            return
        eq = _equivalents(r.reagent)
        if eq != 1:
            raise _ask(
                f"Normality is ambiguous for {r.reagent.display_name} ({eq or 'no'} acid-base equivalents "
                f"per mole): what is its molar concentration?"
            )
        warnings.append(
            f"{r.concentration_m:g} N {r.reagent.display_name} read as {r.concentration_m:g} M (monoprotic)"
        )

    def _titration(self, parse: InstructionParse, scene: SceneInfo | None, warnings: list[str]):
        fam = parse.family
        analyte, titrant = parse.by_role("analyte"), parse.by_role("titrant")
        assert analyte is not None and titrant is not None  # assign_roles asked otherwise
        for r in (titrant, analyte):
            self._molar(r, warnings)
        unknown = _the_unknown(parse, analyte, titrant, warnings)
        missing = [
            f"What is the concentration of the {r.reagent.display_name}?"
            for r in (titrant, analyte)
            if r.concentration_m is None
        ]
        if missing:
            raise _ask(*missing, "It is needed to check that the target is reachable and the titrant fits the beaker.")
        va = analyte.volume_ml
        volumes = [q for q in parse.unbound if q.kind == "volume"]
        used = volumes[0] if va is None and len(volumes) == 1 else None
        _ask_about_leftovers([q for q in volumes if q is not used], parse.text)
        if va is None:
            if len(volumes) == 1:
                va = volumes[0].value
                warnings.append(f"read {volumes[0].text.strip()!r} as the analyte volume")
            else:
                va = DEFAULT_ANALYTE_ML
                warnings.append(f"analyte volume not stated: assuming {va:g} mL of {analyte.reagent.display_name}")
        a = {analyte.reagent.name: analyte.concentration_m}
        t = {titrant.reagent.name: titrant.concentration_m}
        ctx: dict[str, Any] = {}
        target_conditions: dict[str, Any] = {
            "target_ph": None,
            "to_equivalence": False,
            "target_volume_ml": None,
            "target_mass_g": None,
            "colour_change": None,
        }
        need: float | None = None
        if fam == "complexometric_titration":
            need = complexometric_equivalence_ml(analyte.concentration_m, va, titrant.concentration_m) * 1.2
            indicator = parse.by_role("indicator")
            default = _INDICATOR_COLOURS.get(indicator.reagent.name if indicator else "", ("magenta", "blue"))
            c_from, c_to = parse.colour_from or default[0], parse.colour_to or default[1]
            if not (parse.colour_from and parse.colour_to):
                warnings.append(f"endpoint colour change assumed {c_from} -> {c_to} for the indicator")
            target_conditions["colour_change"] = {"from_colour": c_from, "to_colour": c_to}
            ctx.update(
                stop_on="colour",
                colour_from=c_from,
                colour_to=c_to,
                indicator_display=indicator.reagent.display_name if indicator else "indicator",
            )
            if parse.target_ph is not None:
                warnings.append(f"pH {parse.target_ph:g} ignored: a complexometric endpoint is read from the colour")
        elif parse.target_ph is not None:
            target_conditions["target_ph"] = parse.target_ph
            ctx.update(stop_on="ph", target_ph=parse.target_ph)
            try:
                # Sized as the pH meter reads (activity, for a glass electrode): the run stops on the
                # reading, and far past equivalence the reading lags the concentration pH by many mL.
                need = titrant_for_ph(
                    a, va, t, parse.target_ph, self.library, activity=self.registry.ph_reads_activity
                ).volume_ml
            except InfeasibleTargetError:
                need = None  # the rule engine refuses it with the reason
        elif parse.to_equivalence:
            try:
                eq = equivalence_point(a, va, t, self.library)
            except InfeasibleTargetError as exc:
                raise _refuse(str(exc)) from None
            target_conditions["to_equivalence"] = True
            need = eq.volume_ml
            ctx.update(stop_on="ph", target_ph=round(eq.ph, 2))
            if unknown is not None:
                ctx["target_ph"] = self._past_equivalence(a, va, t, titrant, eq.ph, warnings)
            warnings.append(
                f"to the equivalence point: stopping at the theoretical equivalence pH {eq.ph:.2f} "
                f"(about {eq.volume_ml:.2f} mL of titrant)"
            )
        elif titrant.volume_ml is not None:
            need = titrant.volume_ml
            target_conditions["target_volume_ml"] = titrant.volume_ml
            ctx.update(stop_on="volume", target_volume_ml=titrant.volume_ml)
            warnings.append(f"no target pH given: dispensing the stated {titrant.volume_ml:g} mL of titrant")
        else:
            raise _ask(
                "What should end the titration: a target pH (e.g. 'until the pH reaches 8.2') or the equivalence point?"
            )
        if unknown is not None and need is not None:
            need = max(need, min(self.registry.pipette_capacity_ml, self.registry.max_titrant_ml) / 1.1)
        beaker_id, beaker_kind = self._beaker(
            parse, scene, analyte.reagent.name, warnings, va + need if need is not None else None
        )
        room = self.registry.beaker_room_ml(beaker_kind)
        limit = min(self.registry.pipette_capacity_ml, self.registry.max_titrant_ml)
        if titrant.volume_ml is not None and ctx.get("stop_on") != "volume":
            limit = min(limit, titrant.volume_ml)
        # An unknown concentration: the estimate only places the equivalence roughly, so the whole draw
        # the pipette and the beaker allow is taken and the run stops on its own endpoint.
        draw = round(min(limit, need * 1.1 + 1.0), 1) if need is not None and unknown is None else round(limit, 1)
        cap = round(max(min(room - va, draw), 0.1), 1)
        pipette = self._scene_id(scene, "pipette", "pipette")
        container = "titrant_bottle"
        if scene is not None:
            holders = [o for o in scene.holding(titrant.reagent.name, self.library) if o.id != beaker_id]
            container = holders[0].id if holders else container
        settle = parse.settle_each_drop
        ctx.update(
            experiment_name=f"{_FAMILY_LABEL[fam]} of {_conc_text(analyte)} with {_conc_text(titrant)}",
            analyte_name=analyte.reagent.name,
            analyte_display=analyte.reagent.display_name,
            titrant_name=titrant.reagent.name,
            titrant_display=titrant.reagent.display_name,
            analyte_concentration_m=analyte.concentration_m,
            titrant_concentration_m=titrant.concentration_m,
            analyte_volume_ml=va,
            draw_volume_ml=draw,
            max_volume_ml=cap,
            beaker=beaker_id,
            pipette=pipette,
            titrant_container=container,
        )
        if settle is not None:
            ctx["settle_each_drop"] = settle
        ctx["initial_conditions"] = {
            "initial_ph": parse.initial_ph,
            "analyte_volume_ml": va,
            "temperature_c": parse.initial_temperature_c,
        }
        ctx["target_conditions"] = target_conditions
        warnings.extend(_hazard_notes([analyte, titrant, *[r for r in parse.reagents if r not in (analyte, titrant)]]))
        if fam == "acid_base_titration":
            warnings.extend(self._meter_range(a, va, t))
        end = (
            f"until pH {ctx['target_ph']:g}"
            if ctx.get("stop_on") == "ph"
            else f"until the colour turns {ctx.get('colour_to')}"
            if ctx.get("stop_on") == "colour"
            else f"adding {ctx.get('target_volume_ml'):g} mL"
        )
        wait = ", acting only on a settled reading after each drop" if settle else ""
        ctx["operation_intent"] = f"Titrate {va:g} mL of {_conc_text(analyte)} with {_conc_text(titrant)} {end}{wait}."
        reagents = [
            {
                "name": titrant.reagent.name,
                "role": "titrant",
                "concentration_m": titrant.concentration_m,
                "volume_ml": titrant.volume_ml,
                "mass_g": None,
                "unknown": unknown is titrant,
            },
            {
                "name": analyte.reagent.name,
                "role": "analyte",
                "concentration_m": analyte.concentration_m,
                "volume_ml": va,
                "mass_g": None,
                "unknown": unknown is analyte,
            },
        ]
        indicator = parse.by_role("indicator")
        if indicator is not None:
            reagents.append(
                {
                    "name": indicator.reagent.name,
                    "role": "indicator",
                    "concentration_m": indicator.concentration_m,
                    "volume_ml": indicator.volume_ml,
                    "mass_g": indicator.mass_g,
                }
            )
        objects = [beaker_kind] + [o for o in (beaker_id, pipette, container) if o != beaker_kind]
        return ctx, reagents, objects

    def _weighing(self, parse: InstructionParse, scene: SceneInfo | None, warnings: list[str]):
        solid = parse.by_role("solid")
        assert solid is not None
        water = parse.by_role("solvent")
        water_ml = water.volume_ml if water is not None else None
        mass = solid.mass_g
        if mass is None and solid.concentration_m is not None and solid.volume_ml is not None:
            mass = round(solid.concentration_m * solid.volume_ml * 1e-3 * solid.reagent.molar_mass_g_mol, 3)
            water_ml = water_ml or solid.volume_ml
            warnings.append(
                f"{solid.volume_ml:g} mL of {solid.concentration_m:g} M {solid.reagent.display_name} needs "
                f"{mass:g} g; made up with {water_ml:g} mL of water (the solid's volume is neglected)"
            )
        if mass is None:
            raise _ask(f"How much {solid.reagent.display_name} should be weighed (e.g. '2.50 g')?")
        if water_ml is None:
            volumes = [q for q in parse.unbound if q.kind == "volume"]
            if len(volumes) == 1:
                water_ml = volumes[0].value
                if water is None:
                    warnings.append("no solvent named: dissolving in water")
            else:
                raise _ask(f"In how much water should the {solid.reagent.display_name} be dissolved (e.g. '50 mL')?")
        proto = self.protocols.for_family("weighing_dissolution")
        roles = {"solid": solid.reagent.name, "solvent": "water"}
        # "the beaker containing 50 mL of water": the beaker that holds water, when the scene says which
        water_cued = [
            o for g in proto.alternatives for o in g.options if o.condition == "water_in_beaker" and o.cue
            and re.search(o.cue, parse.text, re.I)
        ]
        beaker_id, beaker_kind = self._beaker(parse, scene, "water" if water_cued else None, warnings, water_ml)
        scene_beaker = beaker_id if scene is not None and scene.get(beaker_id) is not None else None
        offer = BenchOffer(scene, self.registry, self.library, roles, scene_beaker)
        choice: dict[str, Any] = {}
        for group in proto.alternatives:
            option, asked = offer.choose(group, parse.text)
            choice[group.name] = option
            if not asked and len(group.options) > 1:
                how = "the bench has it" if scene is not None and option.instrument else "the default"
                warnings.append(f"{group.name.replace('_', ' ')}: {option.display} (not stated; {how})")
        balance = self._scene_id(scene, "balance", "balance")
        stirrer = self._scene_id(scene, "magnetic_stirrer", "magnetic_stirrer")
        cylinder = self._scene_id(scene, "graduated_cylinder", "graduated_cylinder")
        bottle = "solid_bottle"
        for option in choice.values():
            if option.instrument == "solid_bottle":
                holder = offer.holder_of(option)
                bottle = holder.id if holder is not None else bottle
        in_beaker = any(o.condition == "water_in_beaker" for o in choice.values())
        poured = any(o.primitive == "pour_solid" for o in choice.values())
        ctx: dict[str, Any] = {
            "experiment_name": f"{_FAMILY_LABEL['weighing_dissolution']} of {mass:g} g {solid.reagent.display_name} "
            f"in {water_ml:g} mL water",
            "solid_name": solid.reagent.name,
            "solid_display": solid.reagent.display_name,
            "target_mass_g": mass,
            "water_volume_ml": water_ml,
            "beaker": beaker_id,
            "balance": balance,
            "stirrer": stirrer,
            "water_container": cylinder,
            "solid_container": bottle,
            "alternative_instruments": [o.instrument for o in choice.values() if o.instrument],
            **{name: option.value for name, option in choice.items()},
        }
        if parse.settle_each_drop is not None:
            ctx["settle_each_drop"] = parse.settle_each_drop
        ctx["initial_conditions"] = {
            "initial_ph": None,
            "analyte_volume_ml": None,
            "temperature_c": parse.initial_temperature_c,
        }
        ctx["target_conditions"] = {
            "target_ph": None,
            "to_equivalence": False,
            "target_volume_ml": None,
            "target_mass_g": mass,
            "colour_change": None,
        }
        how = f"Pour {mass:g} g of {solid.reagent.display_name} from its bottle" if poured else (
            f"Weigh {mass:g} g of {solid.reagent.display_name} with a spatula"
        )
        if in_beaker:
            ctx["operation_intent"] = (
                f"{how} into the beaker holding {water_ml:g} mL of water on the balance and stir until dissolved."
            )
        else:
            ctx["operation_intent"] = f"{how} into the beaker, add {water_ml:g} mL of water and stir until dissolved."
        reagents = [
            {"name": solid.reagent.name, "role": "solid", "concentration_m": None, "volume_ml": None, "mass_g": mass},
            {"name": "water", "role": "solvent", "concentration_m": None, "volume_ml": water_ml, "mass_g": None},
        ]
        used = [balance, stirrer, bottle if poured else None, None if in_beaker else cylinder]
        objects = [beaker_kind] + [o for o in (beaker_id, *used) if o is not None and o != beaker_kind]
        return ctx, reagents, objects
