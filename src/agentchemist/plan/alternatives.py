"""Interchangeable means of a protocol step (``alternatives`` in config/protocols/*.yaml): which one the
instruction asks for, which ones the bench offers, and which one a plan uses.

A weighing can take its solid from a spatula or pour it from its bottle, and its water from a graduated
cylinder or find it already in the beaker. The rule backend picks one per group
(:meth:`BenchOffer.choose`); the planner's environment check then asks the scene for the picked one and,
when it is not there, names the whole group if the bench has none of them ("spatula or solid reagent
bottle").

Availability is three-valued: True (the scene shows it), False (the scene shows it is not there) and
None (no scene, or a condition the scene cannot show either way: a camera does not see water).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from agentchemist.chemistry.reagents import ReagentLibrary
from agentchemist.plan.protocols import Alternative, AlternativeGroup
from agentchemist.plan.registry import HardwareRegistry
from agentchemist.plan.scene import SceneInfo, SceneObject

__all__ = ["BenchOffer"]


def _beakers(scene: SceneInfo, registry: HardwareRegistry) -> list[SceneObject]:
    kinds = set(registry.kinds_for("beaker")) | set(registry.beakers)
    return [o for o in scene.objects if o.kind in kinds]


@dataclass(frozen=True)
class BenchOffer:
    """What the bench offers one plan: the scene (None: none was given), the registry and library that
    name its kinds and reagents, the plan's role -> reagent name (``reagents``) and the scene id of the
    working beaker when it is known (``beaker_id``)."""

    scene: SceneInfo | None
    registry: HardwareRegistry
    library: ReagentLibrary
    reagents: Mapping[str, str]
    beaker_id: str | None = None

    def holder_of(self, option: Alternative) -> SceneObject | None:
        """The scene object that provides an instrument option: one of its kinds, or (``or_holding``) a
        container other than a beaker that the scene says holds the reagent of that role."""
        scene = self.scene
        if scene is None or option.instrument is None:
            return None
        found = scene.of_kinds(self.registry.kinds_for(option.instrument))
        if found:
            return found[0]
        name = self.reagents.get(option.or_holding or "")
        if name:
            beakers = {o.id for o in _beakers(scene, self.registry)}
            holders = [o for o in scene.holding(name, self.library) if o.id not in beakers]
            if holders:
                return holders[0]
        return None

    def available(self, option: Alternative) -> bool | None:
        """Whether the bench offers ``option`` (see the module docstring)."""
        scene = self.scene
        if scene is None:
            return None
        if option.instrument is not None:
            return self.holder_of(option) is not None
        if option.condition == "water_in_beaker":
            beakers = _beakers(scene, self.registry)
            wet = {o.id for o in scene.holding("water", self.library)}
            target = scene.get(self.beaker_id) if self.beaker_id else None
            if target is not None:
                if target.id in wet:
                    return True
                # a beaker the scene says holds something else does not hold the water
                return False if (target.contains or target.label) else None
            return True if any(o.id in wet for o in beakers) else None
        raise ValueError(f"unknown alternative condition {option.condition!r}")

    def choose(self, group: AlternativeGroup, text: str) -> tuple[Alternative, bool]:
        """(the option to plan with, whether the instruction asked for it). The instruction's cue first
        (when it asks for exactly one option), then the first option, in the protocol's order of
        preference, that the scene shows; with none shown, the first instrument option (an instrument may
        be assumed without a scene, a condition needs the instruction or the scene), which the environment
        check then reports missing together with the rest of the group."""
        cued = [o for o in group.options if o.cue and re.search(o.cue, text, re.I)]
        if len(cued) == 1:
            return cued[0], True
        pool = cued or list(group.options)
        for option in pool:
            if self.available(option):
                return option, False
        return next((o for o in pool if o.instrument is not None), pool[0]), False
