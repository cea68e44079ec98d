"""Errors raised by the chemistry models (all bad-input errors are ValueError subclasses)."""

from __future__ import annotations

__all__ = ["ChemistryInputError", "ConvergenceError"]


class ChemistryInputError(ValueError):
    """Bad input to the chemistry models: NaN or negative amount, non-positive volume, bad temperature."""


class ConvergenceError(ArithmeticError):
    """The solver did not converge (should not happen for valid input; report it as a bug)."""
