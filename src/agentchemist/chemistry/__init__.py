"""Chemistry core: reagent library, acid-base equilibrium, complexometric model (no ROS, no clock).

The main entry points are re-exported here; curve analysis lives in its own modules of this package.
"""

from .complexometric import (
    ComplexometricState,
    ca_edta_equivalence_volume_ml,
    ca_edta_state,
    conditional_formation_constant,
)
from . import equilibrium
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

__all__ = sorted({  # everything the equilibrium module exports that is imported here, and the rest
    *(name for name in equilibrium.__all__ if name in globals()),
    "ComplexometricState",
    "Reagent",
    "ReagentConfigError",
    "ReagentLibrary",
    "UnknownReagentError",
    "alpha_fractions",
    "ca_edta_equivalence_volume_ml",
    "ca_edta_state",
    "conditional_formation_constant",
    "default_library",
})
