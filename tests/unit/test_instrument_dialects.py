"""Instrument dialects and framing: real formats parse; garbage, partial lines, wrong units and
out-of-range values are flagged, never raised."""
import pytest

from agentchemist.hardware.instruments.balance_dialects import MtSics, SartoriusSbi
from agentchemist.hardware.instruments.framing import LineFramer
from agentchemist.hardware.instruments.ph_dialects import HannaRas, TpsContinuous, hanna_checksum


def test_framer_joins_partial_lines_and_isolates_garbage():
    f = LineFramer()
    assert f.feed(b"  7.0") == []
    frames = f.feed(b"0pH    25.0oC\r\n\xff\x00junk\r\n  7.01pH    25.0oC\r\n")
    assert [fr.text for fr in frames if not fr.damaged] == ["  7.00pH    25.0oC", "  7.01pH    25.0oC"]
    assert [fr.damaged for fr in frames] == [False, True, False]
    # An endless run without a terminator is cut, and the line after it is clean again.
    frames = f.feed(b"x" * 500 + b"\r\n  6.00pH    25.0oC\r\n")
    assert frames[0].damaged and frames[-1].text == "  6.00pH    25.0oC" and not frames[-1].damaged


def test_framer_stx_etx_drops_bytes_before_stx():
    f = LineFramer(stx_etx=True)
    frames = f.feed(b"\x13noise\x02ABC\x03\r\x02DEF")
    assert [(fr.text, fr.damaged) for fr in frames] == [("\x13noise", True), ("ABC", False)]
    assert [fr.text for fr in f.feed(b"\x03")] == ["DEF"]


def test_tps_line():
    p = TpsContinuous().parse("  7.02pH    24.8oC")
    ph, t = p.readings
    assert (ph.quantity, ph.value, ph.self_check_ok, ph.stable) == ("pH", 7.02, True, None)
    assert (t.quantity, t.value, t.unit) == ("temperature", 24.8, "degC")


@pytest.mark.parametrize("line, problem", [
    (" 17.00pH    25.0oC", "outside"),            # pH 17
    ("  7.00pX    25.0oC", "unexpected unit"),
    ("  +OVRpH    25.0oC", "over-range"),
    ("  7 00pH    25.0oC", "not calibrated"),
    ("  7.00pH    25.0oCm", "manual temperature"),
])
def test_tps_flags(line, problem):
    readings = TpsContinuous().parse(line).readings
    assert readings and any(not r.self_check_ok and problem in r.problem for r in readings)


@pytest.mark.parametrize("line", ["", "7.00", "  a.bcpH    25.0oC", "  7.00pH    2x.0oC", "  7.00pH    25.0F "])
def test_tps_malformed(line):
    p = TpsContinuous().parse(line)
    assert not p.readings and p.problem


def _ras(body: str) -> str:
    return body + hanna_checksum(body)


def test_hanna_ras():
    body = "0110RR  +7.00   +0.0  +25.00"
    ph, mv, t = HannaRas().parse(_ras(body)).readings
    assert (ph.value, mv.value, t.value) == (7.0, 0.0, 25.0) and all(r.self_check_ok for r in (ph, mv, t))
    assert HannaRas().parse(_ras(body)[:-1] + "0").problem.startswith("answer")       # checksum
    assert not HannaRas().parse(_ras("0100RR  +7.00   +0.0  +25.00")).readings[2].self_check_ok  # no T probe
    over = HannaRas().parse(_ras("0110OR +17.00   +0.0  +25.00")).readings[0]
    assert not over.self_check_ok and "over-range" in over.problem and "outside" in over.problem
    assert HannaRas().parse("Err8").problem


def test_mt_sics_answers():
    d = MtSics(capacity_g=220.0)
    (m,) = d.parse("S S     100.00 g").readings
    assert (m.value, m.stable, m.self_check_ok) == (100.0, True, True)
    (m,) = d.parse("S D      99.87 g").readings
    assert (m.value, m.stable) == (99.87, False)
    assert d.parse("S I").reply == "S I" and not d.parse("S I").readings
    (m,) = d.parse("S +").readings
    assert not m.self_check_ok and "overload" in m.problem
    assert d.parse("T S      12.34 g").extra["tare_g"] == 12.34
    assert d.parse("Z A").reply == "Z A"
    for err in ("ES", "EL", "ET"):
        assert d.parse(err).problem.startswith(f"balance answered {err}")
    (neg,) = d.parse("S S      -3.00 g").readings
    assert not neg.self_check_ok and "negative" in neg.problem
    (oz,) = d.parse("S S       3.00 oz").readings
    assert not oz.self_check_ok and "unexpected unit" in oz.problem
    assert d.parse("S X 1.00 g").problem and d.parse("hello").problem and d.parse("S S     abc g").problem


def test_sartorius_sbi():
    d = SartoriusSbi()
    (m,) = d.parse("+    12.34 g  ").readings
    assert (m.value, m.stable) == (12.34, True)
    (m,) = d.parse("+    12.35    ").readings
    assert (m.value, m.stable, m.self_check_ok) == (12.35, False, True)
    (m,) = d.parse("High").readings
    assert not m.self_check_ok
    assert d.parse("#garbage").problem
