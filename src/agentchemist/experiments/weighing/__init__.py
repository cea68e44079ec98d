"""Weighing and dissolution: a solid poured onto the balance to a target mass, then dissolved and watched."""
from agentchemist.experiments.family import Family

FAMILY = Family(name="weighing_dissolution", label="weighing and dissolution", package=__name__,
                recording=("mass_per_tap", "final_mass"))
