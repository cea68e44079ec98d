"""Acid-base titration: titrant dropped from the gripper's pipette to a pH endpoint read on the pH meter."""
from agentchemist.experiments.family import Family

FAMILY = Family(name="acid_base_titration", label="acid-base titration", package=__name__,
                recording=("ph_per_drop", "titrant_volume_per_drop"))
