"""Standardisation of a NaOH solution against a weighed primary standard, potassium hydrogen phthalate (KHP):
the acid-base titration's machine (drops from the gripper's pipette to a pH past the equivalence), but the
result is the titrant's concentration, c(NaOH) = m(KHP) / (M(KHP) V_eq), from the KHP mass the instruction
states (weighed and dissolved in the beaker before the run: no weighing step here)."""
from agentchemist.experiments.family import Family

FAMILY = Family(name="naoh_standardisation", label="standardisation of NaOH against KHP", package=__name__,
                recording=("ph_per_drop", "titrant_volume_per_drop"))
