"""The rule-based planner backend (the embedded default): parse, pick the protocol, fill it.

``RulesBackend().propose(text, scene, protocol_hint)`` returns a raw plan dict (validated by the
caller), or ``{"question": ...}`` when something essential is missing or unknown, or
``{"refusal": ..., "reasons": [...]}`` when the instruction cannot be an experiment we run.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from agentchemist.control.calibration import CalibrationError, load_or_none
from agentchemist.chemistry.reagents import ReagentLibrary, default_library
from agentchemist.experiments import FAMILIES, family as family_of
from agentchemist.experiments.planning import PlanningStop, ask, refuse
from agentchemist.plan.language import english_only_question, is_not_english
from agentchemist.plan.parse import InstructionParse, parse_instruction
from agentchemist.plan.protocols import ProtocolLibrary
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.roles import assign_roles, detect_family
from agentchemist.plan.parse_text import vessel_location
from agentchemist.plan.scene import INSTRUMENT_DISPLAY, SceneInfo
from agentchemist.plan.scene_reagents import resolve_by_place
from agentchemist.plan.wording import experiment_request

__all__ = ["PlanningData", "RulesBackend", "experiment_id_for"]


def experiment_id_for(text: str) -> str:
    """A deterministic id from the instruction text (no clock): 'exp-' + 12 hex digits."""
    return "exp-" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12]


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


def _covered() -> list[str]:
    """What the registered families plan, as a refusal names them (each family's COVERS, registry order)."""
    parts = [fam.part("planning") for fam in FAMILIES.values()]
    return [part.COVERS for part in parts if part is not None and getattr(part, "COVERS", None)]


def _titration_request_question(parse: InstructionParse) -> str:
    """The question for a titration that names no reagent to run: what is still needed, and what was read
    (a target pH, 'the alkaline solution', 'the liquid in the beaker') is not asked again."""
    low = parse.text.lower()
    sol = re.search(r"\b(?:the\s+)?(alkaline|basic|acidic|acid|base|alkali)\s+solution\b", low)
    titrant = (f"Which {sol.group(1)} solution is drawn into the pipette (reagent and concentration, e.g. "
               "'0.1 M sodium hydroxide')" if sol else "With which titrant (reagent and concentration)")
    sample = ("what is the liquid in the beaker (its volume, reagent and concentration)"
              if re.search(r"\b(?:liquid|solution|sample)\s+in\s+the\s+beaker\b", low)
              else "which solution should be titrated (its volume and concentration)")
    if parse.target_ph is not None:
        return f"To titrate to pH {parse.target_ph:g}: {titrant[0].lower() + titrant[1:]}, and {sample}?"
    end = "what should end the titration (a target pH or the equivalence point)"
    if titrant.startswith("With"):
        return f"Which solution should be titrated (its volume and concentration), {titrant[0].lower() + titrant[1:]}, and {end}?"
    return f"{titrant}, {sample}, and {end}?"


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
        except PlanningStop as stop:
            return stop.payload

    # -- steps ------------------------------------------------------------------------------------
    def _plan(self, text: str, scene: SceneInfo | None, by_place: bool = True) -> dict[str, Any]:
        if is_not_english(text):
            raise ask(english_only_question(text, self.library))
        parse = parse_instruction(text, self.library)
        if parse.refusals:
            raise refuse(*parse.refusals)
        family = detect_family(parse)
        if parse.refusals:
            raise refuse(*parse.refusals)
        if family is None:
            if parse.questions:
                raise ask(*parse.questions)
            kind = experiment_request(parse.text)
            if kind == "titration":
                found = resolve_by_place(parse.text, scene, self.library, self.registry) if by_place else None
                if found is not None:
                    # "draw up the alkaline solution ... adjust the pH of the liquid in the beaker": the
                    # reagents the scene says those containers hold, stated as the titration they make
                    resolved, words = found
                    sentence = resolved.sentence()
                    plan = self._plan(f"{parse.text.rstrip(' .')}. {sentence[0].upper()}{sentence[1:]}.", scene,
                                      by_place=False)
                    plan["warnings"] = resolved.notes(words) + plan["warnings"]
                    return plan
                raise ask(_titration_request_question(parse))
            if kind == "weighing":
                raise ask("Which solid should be weighed, how much (e.g. '2.50 g of sodium chloride'), and in "
                           "how much water should it be dissolved?")
            raise refuse(f"this is not an experiment the protocol library covers ({', '.join(_covered())})")
        if parse.questions:  # unknown reagents first: roles built on a misread reagent are noise
            raise ask(*parse.questions)
        assign_roles(parse, family)
        if parse.refusals:
            raise refuse(*parse.refusals)
        if parse.questions:
            raise ask(*parse.questions)
        parse.family = family
        fam = family_of(family)
        planning = fam.part("planning")
        warnings = list(parse.warnings)
        draft = planning.draft(parse, scene, warnings, self, fam)
        ctx, reagents, objects = draft.context, draft.reagents, draft.objects
        proto = self.protocols.for_family(family)
        if planning.DISPENSES_DROPS:
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
        recording = list(fam.recording) + [d for d in parse.data_recording if d not in fam.recording]
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

    # -- the PlanningHost a family drafts with (agentchemist.experiments.planning) -----------------
    def beaker(
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
                    raise refuse(f"beaker {beakers[0].id!r} ({cap:g} mL) is not in the hardware registry")
                if cap is None:
                    warnings.append(f"the scene does not give the size of {beakers[0].id}: assuming {kind}")
                return beakers[0].id, kind
            if len(beakers) > 1:
                options = ", ".join(self._beaker_text(o) for o in beakers)
                raise ask(f"Which beaker should be used: {options}?" + note)
        if parse.container_capacity_ml is not None:
            kind = reg.beaker_for_capacity(parse.container_capacity_ml)
            if kind is None:
                raise refuse(
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

    def scene_id(self, scene: SceneInfo | None, instrument: str, default: str) -> str:
        if scene is None:
            return default
        found = scene.of_kinds(self.registry.kinds_for(instrument))
        return found[0].id if found else default
