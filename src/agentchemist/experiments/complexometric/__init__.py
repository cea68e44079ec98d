"""Complexometric (Ca/EDTA) titration: titrant dropped to a colour endpoint the front camera reads."""
from agentchemist.experiments.family import Family

FAMILY = Family(name="complexometric_titration", label="complexometric titration", package=__name__,
                recording=("titrant_volume_per_drop", "colour_per_drop"))
