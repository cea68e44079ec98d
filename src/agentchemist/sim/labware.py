"""The labware on the twin's bench: where each item is, what it stands on, and where it belongs.

Items start where the scenario's layout puts them (their "home"); faults take them away or move them for
a while, and a new sample puts every item back home."""
from __future__ import annotations

from dataclasses import replace

from agentchemist.sim.errors import finite_number
from agentchemist.sim.scenario import Scenario
from agentchemist.sim.types import LabwareItem
from agentchemist.workcell.tags import default_marker_id

__all__ = ["Labware"]


class Labware:
    def __init__(self, scenario: Scenario) -> None:
        self.items: dict[str, LabwareItem] = {}
        for spec in scenario.all_items():
            self.items[spec.id] = LabwareItem(
                id=spec.id, kind=spec.kind, present=spec.present, position=tuple(spec.position), on=spec.on,
                marker_id=spec.marker_id if spec.marker_id is not None else default_marker_id(spec.id),
                label=spec.label, capacity_ml=spec.capacity_ml, mass_g=spec.mass_g,
            )
        self._home = {k: (v.present, v.position, v.on) for k, v in self.items.items()}

    def present(self, item_id: str) -> bool:
        item = self.items.get(item_id)
        return item is not None and item.present

    def present_kind(self, kind: str) -> bool:
        """True if no item of ``kind`` is in the layout (not modelled) or at least one is present."""
        of_kind = [i for i in self.items.values() if i.kind == kind]
        return not of_kind or any(i.present for i in of_kind)

    def move(self, item: LabwareItem, position: tuple[float, float] | None, on: str | None) -> None:
        """Pick-and-place (kinematic): a new image position and/or what it stands on. Placed on an item
        without a position, it stands at that item's u."""
        if position is not None:
            item.position = (finite_number(position[0], "u"), finite_number(position[1], "v"))
        if on is not None:
            item.on = on
            if position is None:
                base = self.items[on].position
                item.position = (base[0], item.position[1])

    def restore(self, item_id: str) -> None:
        """Put the item back where the scenario had it (present, position, support)."""
        item = self.items[item_id]
        item.present, item.position, item.on = self._home[item_id]

    def restore_all(self) -> None:
        for item_id in self._home:
            self.restore(item_id)

    def copies(self) -> list[LabwareItem]:
        """Every item as it is now (copies: the caller cannot move the twin's labware)."""
        return [replace(i) for i in self.items.values()]
