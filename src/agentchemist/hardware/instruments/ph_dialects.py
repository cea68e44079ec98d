"""pH meter dialects: what the meter sends on its serial port, parsed into readings.

Two real kinds of meter interface (layouts from the makers' manuals; the code is ours):

``tps_continuous`` - continuous ASCII output, as the TPS 901-PH benchtop meter sends with its Send
function at a set interval (9600 8N1): one CR LF line per sample,
    ``DDDDDDUU  TTTTTToC`` or ``...oCm``
a value right-justified in 6 characters (``  7.00``), the unit ``pH`` or ``mV``, two spaces, the
temperature right-justified in 6 characters and ``oC`` (measured by the probe) or ``oCm`` (manual
temperature compensation: no probe). The meter sends a space instead of the decimal point while
uncalibrated, ``+OVR`` / ``-OVR`` for an over-range value and ``BUSY`` while in calibration or a menu.
The meter has no stability flag on the line: stability is judged by the link from the drift.

``hanna_ras`` - request/response, as Hanna bench meters (HI 2221/2222/2223 class) answer the ``RAS``
command (sent as ``16RAS`` CR): ``STX <answer> <checksum> ETX``, the answer being the meter mode (2 chars,
``01`` pH at 0.01 resolution, ``03`` mV), the status byte as 2 hex digits (0x10: temperature probe
connected), the reading status (2 chars, R in range / O over / U under, for pH and mV), the pH (7 chars
with sign and point), the mV (7 chars) and the temperature in degC (8 chars); the checksum is the byte sum
of the answer modulo 256 as 2 hex digits. A meter that does not know the command answers nothing.

Both are parsed to quantities pH (unit pH), mV and temperature (degC). A reading outside the meter's range
(pH -2 .. 16, temperature -5 .. 105 degC: what such meters display) or with an unexpected unit is
flagged (self_check_ok false), never dropped silently and never raised.
"""
from __future__ import annotations

from agentchemist.hardware.instruments.readings import Parsed, Reading, check_range, parse_number

PH_RANGE = (-2.0, 16.0)
TEMPERATURE_RANGE_C = (-5.0, 105.0)
MV_RANGE = (-2000.0, 2000.0)


class TpsContinuous:
    """TPS 901-PH style continuous line output (see the module docstring)."""
    name = "tps_continuous"
    stx_etx = False
    request = b""          # the meter talks on its own

    def parse(self, text: str) -> Parsed:
        line = text.rstrip()
        if line.strip() == "BUSY":
            return Parsed(reply="busy")
        if len(line) < 16:
            return Parsed(problem=f"malformed line {text!r}: too short for value, unit and temperature")
        value_text, unit, gap, rest = line[:6], line[6:8].strip(), line[8:10], line[10:]
        temp_text, temp_unit = rest[:6], rest[6:].strip()
        readings = []
        if gap.strip():
            return Parsed(problem=f"malformed line {text!r}: no gap after the unit")
        if temp_unit not in ("oC", "oCm"):
            return Parsed(problem=f"malformed line {text!r}: unexpected temperature unit {temp_unit!r}")
        temperature = parse_number(temp_text)
        if temperature is None:
            return Parsed(problem=f"malformed line {text!r}: temperature {temp_text!r} is not a number")
        t = check_range(Reading("temperature", temperature, "degC"), *TEMPERATURE_RANGE_C)
        if temp_unit == "oCm":
            t = t.flagged("manual temperature (no probe connected)")
        stripped = value_text.strip()
        if stripped in ("+OVR", "-OVR"):
            kind = "over" if stripped[0] == "+" else "under"
            bound = PH_RANGE[1] if kind == "over" else PH_RANGE[0]
            quantity, unit_out = ("pH", "pH") if unit == "pH" else ("mV", "mV")
            readings.append(Reading(quantity, bound, unit_out, self_check_ok=False,
                                    problem=f"meter reports {kind}-range"))
            return Parsed(readings=tuple(readings) + (t,))
        number = parse_number(value_text)
        uncalibrated = False
        if number is None and "." not in value_text and value_text.strip().count(" ") == 1:
            # Uncalibrated: the decimal point is sent as a space (' 7 00').
            number = parse_number(value_text.strip().replace(" ", "."))
            uncalibrated = number is not None
        if number is None:
            return Parsed(problem=f"malformed line {text!r}: value {value_text!r} is not a number")
        if unit == "pH":
            reading = check_range(Reading("pH", number, "pH"), *PH_RANGE)
        elif unit == "mV":
            reading = check_range(Reading("mV", number, "mV"), *MV_RANGE)
        else:
            reading = Reading("pH", number, unit or "?", self_check_ok=False,
                              problem=f"unexpected unit {unit!r} (expected pH or mV)")
        if uncalibrated:
            reading = reading.flagged("meter not calibrated")
        return Parsed(readings=(reading, t))


def hanna_checksum(answer: str) -> str:
    return f"{sum(answer.encode('latin-1')) % 256:02X}"


class HannaRas:
    """Hanna ``RAS`` request/response (see the module docstring)."""
    name = "hanna_ras"
    stx_etx = True
    request = b"16RAS\r"
    ANSWER_LENGTH = 2 + 2 + 2 + 7 + 7 + 8

    def parse(self, text: str) -> Parsed:
        if text.startswith("Err"):
            return Parsed(problem=f"meter answered {text!r}")
        if len(text) != self.ANSWER_LENGTH + 2:
            return Parsed(problem=f"malformed answer {text!r}: {len(text)} characters, expected "
                                  f"{self.ANSWER_LENGTH + 2}")
        answer, checksum = text[:-2], text[-2:]
        if hanna_checksum(answer) != checksum.upper():
            return Parsed(problem=f"answer {text!r} fails its checksum ({checksum} != {hanna_checksum(answer)})")
        mode, status_hex, status = answer[0:2], answer[2:4], answer[4:6]
        ph_text, mv_text, temp_text = answer[6:13], answer[13:20], answer[20:28]
        try:
            status_byte = int(status_hex, 16)
        except ValueError:
            return Parsed(problem=f"malformed answer {text!r}: status {status_hex!r} is not hex")
        if mode not in ("01", "03") or any(c not in "ROU" for c in status):
            return Parsed(problem=f"malformed answer {text!r}: mode {mode!r} / reading status {status!r}")
        values = [parse_number(v) for v in (ph_text, mv_text, temp_text)]
        if any(v is None for v in values):
            return Parsed(problem=f"malformed answer {text!r}: a value is not a number")
        ph, mv, temperature = values
        readings = []
        if mode == "01":
            r = check_range(Reading("pH", ph, "pH"), *PH_RANGE)
            if status[0] != "R":
                r = r.flagged(f"meter reports pH {'over' if status[0] == 'O' else 'under'}-range")
            readings.append(r)
        m = check_range(Reading("mV", mv, "mV"), *MV_RANGE)
        if status[1] != "R":
            m = m.flagged(f"meter reports mV {'over' if status[1] == 'O' else 'under'}-range")
        readings.append(m)
        t = check_range(Reading("temperature", temperature, "degC"), *TEMPERATURE_RANGE_C)
        if not status_byte & 0x10:
            t = t.flagged("no temperature probe connected")
        readings.append(t)
        return Parsed(readings=tuple(readings), extra={"status": status_byte})


PH_DIALECTS = {d.name: d for d in (TpsContinuous, HannaRas)}
