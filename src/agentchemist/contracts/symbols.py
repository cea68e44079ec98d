"""Every symbol agents exchange, as one enum: a misspelt symbol is an AttributeError at import, not a run
that waits forever for a word nobody says.

Two kinds share the AgentMessage ``symbol`` field and this enum:

- **input symbols** of the experiment machine (a protocol's ``state_machine.input_symbols``): events the
  vision supervisor applies as transitions (``grasp_ok``, ``drop``, ``ph_stable``, ``endpoint`` ...);
- **notes**: what an agent tells another beside the machine (``hold``/``release``/``resume`` to the
  dispenser, ``ph_settled``/``mass_settled``/``dissolved`` to the recorder, ``record_closed`` to the
  summarizer, ``report_written`` to the planner ...).

``Symbol`` is a ``StrEnum``: a member is equal to its string, so messages, protocol YAML and recorded bags
keep the same text.
"""
from __future__ import annotations

from enum import StrEnum

__all__ = ["INPUT_SYMBOLS", "NOTE_SYMBOLS", "Symbol", "symbol"]


class Symbol(StrEnum):
    # ---- machine input symbols (config/protocols/*.yaml)
    GRASP_OK = "grasp_ok"
    DRAW_OK = "draw_ok"
    ACT = "act"
    TITRATE = "titrate"
    DROP = "drop"
    PH_STABLE = "ph_stable"
    COLOUR_STABLE = "colour_stable"
    RECORD = "record"
    ENDPOINT = "endpoint"
    VERIFIED = "verified"
    PLACE_OK = "place_ok"
    TARE_OK = "tare_ok"
    DOSE = "dose"
    TAP = "tap"
    MASS_STABLE = "mass_stable"
    TARGET_MASS = "target_mass"
    TRANSFER_OK = "transfer_ok"
    POUR_OK = "pour_ok"
    STIR_OK = "stir_ok"
    DISSOLVED = "dissolved"
    # ---- notes beside the machine
    HOLD = "hold"                      #: supervisor -> dispenser: keep the goal, squeeze nothing
    RELEASE = "release"                #: supervisor -> dispenser: a hold's reason is gone
    RESUME = "resume"                  #: supervisor -> dispenser: the solution settled, next drop
    PH_SETTLED = "ph_settled"          #: the recorder's name for a settled pH (a record quantity, never sent today)
    MASS_SETTLED = "mass_settled"      #: supervisor -> recorder: the balance settled (mass_g, final)
    ARTIFACT = "artifact"              #: an agent -> recorder: a file belonging to the run
    DISPATCH = "dispatch"              #: supervisor -> the subtask's agent: what to do (primitive, parameters)
    RECORD_CLOSED = "record_closed"    #: recorder -> summarizer: the store is closed, report it
    REPORT_WRITTEN = "report_written"  #: summarizer -> planner
    REPORT_FAILED = "report_failed"    #: summarizer -> planner


INPUT_SYMBOLS: frozenset[Symbol] = frozenset({
    Symbol.GRASP_OK, Symbol.DRAW_OK, Symbol.ACT, Symbol.TITRATE, Symbol.DROP, Symbol.PH_STABLE,
    Symbol.COLOUR_STABLE, Symbol.RECORD, Symbol.ENDPOINT, Symbol.VERIFIED, Symbol.PLACE_OK, Symbol.TARE_OK,
    Symbol.DOSE, Symbol.TAP, Symbol.MASS_STABLE, Symbol.TARGET_MASS, Symbol.TRANSFER_OK, Symbol.POUR_OK,
    Symbol.STIR_OK, Symbol.DISSOLVED})
#: notes only (input symbols may also be told to the recorder as notes: ph_stable, endpoint, verified, dissolved)
NOTE_SYMBOLS: frozenset[Symbol] = frozenset(Symbol) - INPUT_SYMBOLS


def symbol(text: str) -> Symbol:
    """The Symbol named ``text``; ValueError naming the known ones for anything else."""
    try:
        return Symbol(text)
    except ValueError:
        raise ValueError(f"unknown symbol {text!r}; known: {', '.join(s.value for s in Symbol)}") from None
