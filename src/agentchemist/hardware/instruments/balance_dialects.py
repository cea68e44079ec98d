"""Balance dialects: MT-SICS (request/response) and Sartorius SBI continuous output.

``mt_sics`` - Mettler Toledo's Standard Interface Command Set (level 0/1, spoken by NewClassic, Excellence,
XPR and weigh modules; command and answer end with CR LF). The commands used here:
    ``S``  stable weight      -> ``S S <value> <unit>``, or ``S I`` (busy / no stability in time),
                                 ``S +`` overload, ``S -`` underload
    ``SI`` weight immediately -> ``S S <value> <unit>`` (stable) or ``S D <value> <unit>`` (dynamic)
    ``T``  tare               -> ``T S <tare value> <unit>``, ``T I``, ``T +``, ``T -``
    ``Z``  zero               -> ``Z A`` (done), ``Z I``, ``Z +``, ``Z -``
and the general errors ``ES`` (syntax: command not known), ``ET`` (transmission), ``EL`` (logical:
command not allowed now). The weight is right-aligned in a 10-character field after the status.

``sartorius_sbi`` - Sartorius's SBI print format sent continuously (auto print), one line per reading:
a sign, the value right-aligned with its decimal point, a space and the unit; the unit is left blank while
the weight is unstable (that is the balance's own stability flag). ``High`` / ``Low`` lines mean overload /
underload. Tare and zero are one command here, ``ESC T`` CR LF; the balance sends no acknowledgement.

A weight with another unit than grams, a negative net mass beyond ``negative_tolerance_g`` or above the
capacity is flagged (self_check_ok false), not dropped.
"""
from __future__ import annotations

from agentchemist.hardware.instruments.readings import Parsed, Reading, parse_number

EXPECTED_UNIT = "g"


def check_mass(reading: Reading, negative_tolerance_g: float, capacity_g: float) -> Reading:
    if reading.unit != EXPECTED_UNIT:
        reading = reading.flagged(f"unexpected unit {reading.unit!r} (expected {EXPECTED_UNIT})")
    if reading.value < -negative_tolerance_g:
        reading = reading.flagged(f"negative mass {reading.value:g} g below -{negative_tolerance_g:g} g")
    if reading.value > capacity_g:
        reading = reading.flagged(f"mass {reading.value:g} g above the capacity {capacity_g:g} g")
    return reading


class _BalanceDialect:
    """What both dialects share: the balance's limits, the mass check and the over/underload reading."""

    name = ""
    stx_etx = False

    def __init__(self, negative_tolerance_g: float = 0.5, capacity_g: float = 1000.0) -> None:
        self.negative_tolerance_g = negative_tolerance_g
        self.capacity_g = capacity_g

    def _checked(self, reading: Reading) -> Parsed:
        return Parsed(readings=(check_mass(reading, self.negative_tolerance_g, self.capacity_g),))

    def _out_of_range(self, overload: bool, reply: str = "") -> Parsed:
        """The balance says overload (reading at the capacity) or underload (at 0), both flagged."""
        what = "overload" if overload else "underload"
        bound = self.capacity_g if overload else 0.0
        return Parsed(readings=(Reading("mass", bound, EXPECTED_UNIT, stable=False, self_check_ok=False,
                                        problem=f"balance reports {what}"),), reply=reply)


class MtSics(_BalanceDialect):
    name = "mt_sics"
    request = b"SI\r\n"
    tare_command = b"T\r\n"
    zero_command = b"Z\r\n"

    def parse(self, text: str) -> Parsed:
        line = text.strip()
        if line in ("ES", "ET", "EL"):
            meaning = {"ES": "syntax error (command not known)", "ET": "transmission error",
                       "EL": "logical error (command not allowed now)"}[line]
            return Parsed(problem=f"balance answered {line}: {meaning}", reply=line)
        parts = line.split(None, 2)
        if len(parts) < 2 or parts[0] not in ("S", "T", "Z"):
            return Parsed(problem=f"malformed line {text!r}: not an MT-SICS answer to S, SI, T or Z")
        command, status = parts[0], parts[1]
        if command == "Z":
            if status in ("A", "I", "+", "-") and len(parts) == 2:
                return Parsed(reply=f"Z {status}")
            return Parsed(problem=f"malformed zero answer {text!r}")
        if status in ("I", "+", "-") and len(parts) == 2:
            if status == "I":
                return Parsed(reply=f"{command} I")
            if command == "S":
                return self._out_of_range(status == "+", reply=f"S {status}")
            return Parsed(reply=f"T {status}", problem=f"tare refused: {'overload' if status == '+' else 'underload'}")
        if status not in ("S", "D") or len(parts) != 3 or (command == "T" and status != "S"):
            return Parsed(problem=f"malformed line {text!r}: status {status!r}")
        body = parts[2].rstrip()
        value_text, _, unit = body.rpartition(" ")
        value = parse_number(value_text)
        if value is None or not unit:
            return Parsed(problem=f"malformed line {text!r}: no '<value> <unit>' after the status")
        if command == "T":
            return Parsed(reply="T S", extra={"tare_g": value, "unit": unit})
        return self._checked(Reading("mass", value, unit, stable=status == "S"))


class SartoriusSbi(_BalanceDialect):
    name = "sartorius_sbi"
    request = b""
    tare_command = b"\x1bT\r\n"
    zero_command = b"\x1bT\r\n"

    def parse(self, text: str) -> Parsed:
        line = text.strip()
        if line in ("High", "Low"):
            return self._out_of_range(line == "High")
        if not line or line[0] not in "+- 0123456789":
            return Parsed(problem=f"malformed line {text!r}: not an SBI weight line")
        parts = line.rsplit(None, 1)
        unit = ""
        if len(parts) == 2 and parse_number(parts[1]) is None:
            value_text, unit = parts
        else:
            value_text = line
        value = parse_number(value_text)
        if value is None:
            return Parsed(problem=f"malformed line {text!r}: value {value_text!r} is not a number")
        reading = Reading("mass", value, unit or EXPECTED_UNIT, stable=bool(unit))
        if unit and unit != EXPECTED_UNIT:
            reading = Reading("mass", value, unit, stable=True)
        return self._checked(reading)


BALANCE_DIALECTS = {d.name: d for d in (MtSics, SartoriusSbi)}
