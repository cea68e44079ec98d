"""What the twin's lab believes its containers hold: the inventory the vision supervisor reads in the twin.

Three layers, later ones replacing earlier ones entry by entry:

1. the lab's default inventory (``config/inventory.yaml``);
2. each layout item's printed ``label`` that names a reagent (and a concentration): "NaOH 0.1 M" on the
   titrant bottle, "EDTA 0.01 M", "NaCl" (the label is what the lab wrote on the container);
3. the scenario's ``inventory:`` block (a scenario that mislabels a bottle says so here).

What is really in the containers is the scenario's ``titrant`` and ``beaker.solution``: they can differ
(``config/scenarios/fault_mislabelled_titrant.yaml``).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from agentchemist.workcell.inventory import Inventory, inventory_from_dict, load_inventory
from agentchemist.workcell.tags import default_marker_id
from agentchemist.chemistry.reagents import default_library
from agentchemist.plan.units import QuantityError, find_quantities
from agentchemist.sim.scenario import Scenario

__all__ = ["label_entry", "twin_inventory", "write_twin_inventory"]


def label_entry(label: str) -> dict | None:
    """An inventory entry from a printed label ("NaOH 0.1 M" -> naoh 0.1 M), or None when it names no
    reagent of the library (an indicator's "PhPh")."""
    found = default_library().find_in_text(label or "")
    if len(found) != 1:
        return None
    entry: dict = {"reagent": found[0][0].name}
    try:
        conc = [q for q in find_quantities(label) if q.kind == "concentration"]
    except QuantityError:
        conc = []
    if len(conc) == 1:
        entry["concentration"] = conc[0].value
    return entry


def twin_inventory(scenario: Scenario, base: Inventory | None = None) -> Inventory:
    """The twin lab's inventory for ``scenario`` (see the module docstring)."""
    base = base if base is not None else load_inventory()
    labels = {}
    for item in scenario.all_items():
        entry = label_entry(item.label)
        if entry is not None:
            mid = item.marker_id if item.marker_id is not None else default_marker_id(item.id)
            key = item.id if default_marker_id(item.id) is not None else str(mid)
            labels[key] = entry
    inv = base.merged(inventory_from_dict({"items": labels}, f"{scenario.name}: layout labels"))
    return inv.merged(inventory_from_dict({"items": dict(scenario.inventory)}, f"{scenario.name}: inventory"))


def write_twin_inventory(scenario: Scenario, path: str | Path) -> Path:
    """Write the twin's inventory where the vision supervisor's ``inventory_file`` will point."""
    file = Path(path)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(yaml.safe_dump(twin_inventory(scenario).as_dict(), sort_keys=False))
    return file
