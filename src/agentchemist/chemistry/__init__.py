"""Chemistry core: reagent library, acid-base equilibrium, complexometric model (no ROS, no clock).

The main entry points are re-exported here; curve analysis lives in its own modules of this package.
"""

from .complexometric import (
    ComplexometricState,
    ca_edta_equivalence_volume_ml,
    ca_edta_state,
    conditional_formation_constant,
)
from .equilibrium import (
    ChemistryInputError,
    ConvergenceError,
    alpha_fractions,
    equivalence_volumes_ml,
    kw_at,
    ph_of_mixture,
    ph_of_mixtures,
    pkw_at,
    titration_curve,
)
from .reagents import (
    Reagent,
    ReagentConfigError,
    ReagentLibrary,
    UnknownReagentError,
    default_library,
)

__all__ = [
    "ChemistryInputError",
    "ComplexometricState",
    "ConvergenceError",
    "Reagent",
    "ReagentConfigError",
    "ReagentLibrary",
    "UnknownReagentError",
    "alpha_fractions",
    "ca_edta_equivalence_volume_ml",
    "ca_edta_state",
    "conditional_formation_constant",
    "default_library",
    "equivalence_volumes_ml",
    "kw_at",
    "ph_of_mixture",
    "ph_of_mixtures",
    "pkw_at",
    "titration_curve",
]
