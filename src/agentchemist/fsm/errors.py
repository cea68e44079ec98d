"""Typed errors of the experiment state machine (all ValueError: they are about bad input)."""

from __future__ import annotations

from typing import Iterable

__all__ = ["FsmTimeError", "InvalidMachineError", "RejectedSymbolError"]


class InvalidMachineError(ValueError):
    """A plan whose state machine or task decomposition cannot run; ``reasons`` lists every problem."""

    def __init__(self, reasons: Iterable[str]) -> None:
        self.reasons: list[str] = list(reasons)
        if not self.reasons:
            raise ValueError("InvalidMachineError needs at least one reason")
        super().__init__("invalid experiment machine: " + "; ".join(self.reasons))


class RejectedSymbolError(ValueError):
    """A symbol that the machine cannot take in its current state (or while paused / terminal)."""

    def __init__(self, symbol: str, state: str, reason: str) -> None:
        self.symbol = symbol
        self.state = state
        self.reason = reason
        super().__init__(f"symbol {symbol!r} rejected in state {state!r}: {reason}")


class FsmTimeError(ValueError):
    """A time stamp that is not finite or runs backwards relative to the machine's last event."""
