"""The standardisation's result: the NaOH concentration found against a weighed primary standard.

    c(NaOH) = P m / (M V_eq)      (one titratable proton per formula unit of KHP)

with m the standard's stated mass (g), P its purity (mass fraction), M its molar mass (g/mol) and V_eq
the equivalence volume the analysis located (mL). The standard uncertainty combines relative parts in
quadrature (GUM, JCGM 100:2008; the sources are independent):

- **equivalence volume**: the analysis's own budget for V_eq (location on the curve, drop volume
  calibration, drop scatter), taken as it is;
- **mass**: a balance of resolution d rounds each reading within +-d/2 (rectangular, u = d / (2 sqrt 3));
  a mass weighed by difference (tare, then gross) is two readings, u = d / sqrt 6. When the caller does
  not know the balance, the resolution is the last digit the chemist wrote ("0.5105 g": 0.1 mg), which is
  what the stated number can carry;
- **purity**: a primary standard's certificate gives a range (ACS primary-standard KHP: 99.95-100.05 %);
  its middle is used and the half-width is rectangular, u = half-width / sqrt 3;
- the molar mass (204.22 g/mol, from standard atomic weights known to about 1e-5 relative) is left out:
  two orders below the others.

The nominal concentration (the bottle's label) is what the run set out to check, never an input to the
result; :attr:`Standardisation.label_agrees` says whether the label lies within the expanded interval.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from agentchemist.chemistry.analysis_uncertainty import (
    UncertaintyBudget,
    UncertaintyComponent,
    UncertaintyInputs,
    combine_budget,
)

__all__ = ["KHP", "STANDARDS", "PrimaryStandard", "Standardisation", "resolution_of", "standardise"]


@dataclass(frozen=True)
class PrimaryStandard:
    """A weighed primary standard: its reagent (config/reagents.yaml), molar mass and certified purity."""

    reagent: str
    molar_mass_g_mol: float
    purity_low: float               #: mass fraction, e.g. 0.9995
    purity_high: float
    purity_source: str
    protons: int = 1                #: protons NaOH takes per formula unit

    def __post_init__(self) -> None:
        if not (0 < self.purity_low <= self.purity_high <= 1.01):
            raise ValueError(f"{self.reagent}: purity range {self.purity_low}-{self.purity_high} is not a fraction")
        if not (self.molar_mass_g_mol > 0 and self.protons >= 1):
            raise ValueError(f"{self.reagent}: molar mass and protons must be positive")

    @property
    def purity(self) -> float:
        return (self.purity_low + self.purity_high) / 2.0

    @property
    def purity_rel_u(self) -> float:
        """Relative standard uncertainty of the purity (rectangular over the certified range)."""
        return (self.purity_high - self.purity_low) / 2.0 / math.sqrt(3.0) / self.purity


#: potassium hydrogen phthalate, KHC8H4O4 (the reagent library's molar mass, IUPAC 2021 atomic weights)
KHP = PrimaryStandard("khp", 204.22, 0.9995, 1.0005,
                      "ACS Reagent Chemicals, potassium acid phthalate, primary standard grade: 99.95-100.05 %")
#: the primary standards this family titrates, by reagent name
STANDARDS = {KHP.reagent: KHP}


def resolution_of(stated: str | float) -> float:
    """The resolution a stated number carries: its last written digit ("0.5105" -> 0.0001, "0.51" -> 0.01,
    "2" -> 1). A float is read as Python prints it, so pass the chemist's text where there is one."""
    try:
        exponent = Decimal(str(stated).strip()).as_tuple().exponent
    except InvalidOperation:
        raise ValueError(f"not a number: {stated!r}") from None
    if not isinstance(exponent, int):
        raise ValueError(f"not a finite number: {stated!r}")
    return float(Decimal(1).scaleb(exponent))


@dataclass(frozen=True)
class Standardisation:
    """The NaOH concentration found, its budget, and what it was found from."""

    concentration_m: float
    budget: UncertaintyBudget
    mass_g: float
    equivalence_ml: float
    standard: PrimaryStandard
    nominal_m: float | None = None

    @property
    def uncertainty_m(self) -> float:
        """Combined standard uncertainty (mol/L)."""
        return self.budget.combined

    @property
    def expanded_m(self) -> float:
        """Expanded uncertainty U = k u (mol/L), k the budget's coverage factor (2: about 95 %)."""
        return self.budget.expanded

    @property
    def deviation_from_nominal(self) -> float | None:
        """(found - nominal) / nominal, None without a nominal concentration."""
        if not self.nominal_m:
            return None
        return (self.concentration_m - self.nominal_m) / self.nominal_m

    @property
    def label_agrees(self) -> bool | None:
        """Whether the nominal concentration lies within the expanded interval; None without one."""
        if not self.nominal_m:
            return None
        return abs(self.concentration_m - self.nominal_m) <= self.expanded_m

    def as_dict(self) -> dict:
        return {
            "titrant_m": self.concentration_m, "uncertainty_m": self.uncertainty_m,
            "expanded_uncertainty_m": self.expanded_m, "coverage_factor": self.budget.coverage_factor,
            "standard": self.standard.reagent, "standard_mass_g": self.mass_g,
            "standard_molar_mass_g_mol": self.standard.molar_mass_g_mol, "standard_purity": self.standard.purity,
            "purity_source": self.standard.purity_source, "equivalence_volume_ml": self.equivalence_ml,
            "nominal_m": self.nominal_m, "deviation_from_nominal": self.deviation_from_nominal,
            "label_agrees": self.label_agrees, "budget": self.budget.as_dict(),
        }


def standardise(mass_g: float, equivalence_ml: float, equivalence_u_ml: float, *, balance_resolution_g: float,
                standard: PrimaryStandard = KHP, by_difference: bool = True, nominal_m: float | None = None,
                inputs: UncertaintyInputs | None = None) -> Standardisation:
    """c(NaOH) from the standard's mass and the equivalence volume, with its budget (see the module).

    ``equivalence_u_ml``: the standard uncertainty of V_eq (the analysis's combined budget);
    ``by_difference``: the mass is a tare and a gross reading (two roundings), else one reading."""
    for name, value in (("mass_g", mass_g), ("equivalence_ml", equivalence_ml)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    for name, value in (("equivalence_u_ml", equivalence_u_ml), ("balance_resolution_g", balance_resolution_g)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if nominal_m is not None and not (math.isfinite(nominal_m) and nominal_m > 0):
        raise ValueError(f"nominal_m must be > 0 mol/L, got {nominal_m!r}")
    inputs = inputs or UncertaintyInputs()
    moles = standard.purity * mass_g / standard.molar_mass_g_mol * standard.protons
    c = moles / (equivalence_ml / 1000.0)
    readings = 2 if by_difference else 1
    u_mass = balance_resolution_g / (2.0 * math.sqrt(3.0)) * math.sqrt(readings)
    how = "tare and gross readings" if by_difference else "one reading"
    components = [
        UncertaintyComponent("equivalence volume", c * equivalence_u_ml / equivalence_ml,
                             f"{equivalence_u_ml / equivalence_ml:.2%} relative ({equivalence_u_ml:.2g} mL "
                             f"of {equivalence_ml:.3f} mL)"),
        UncertaintyComponent(f"{standard.reagent} mass", c * u_mass / mass_g,
                             f"{u_mass / mass_g:.2%} relative: {balance_resolution_g:g} g resolution, {how}"),
        UncertaintyComponent(f"{standard.reagent} purity", c * standard.purity_rel_u,
                             f"{standard.purity_rel_u:.3%} relative: {standard.purity_source}"),
    ]
    budget = combine_budget("titrant concentration", "mol/L", c, components, inputs)
    return Standardisation(c, budget, mass_g, equivalence_ml, standard, nominal_m)
