"""The buffer calibration procedure at the meter: the electrode in each buffer in turn, a stable
potential and temperature read over the serial line, then the fit (`electrode.calibrate`).

A reading counts as stable when the potential stays within `band_mv` (0.5 mV, about 0.01 pH) for
`window_s` (10 s) - the kind of drift criterion a meter's own "stable" sign uses; a buffer that does not
settle within `timeout_s` fails the procedure with the last spread, rather than calibrating on a drifting
electrode. A meter that sends only pH (computed with the ideal electrode) is turned back into mV.

Time comes from the `clock` and `sleep` the caller passes (the CLI passes time.monotonic / time.sleep).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Callable

from agentchemist.hardware.instruments.electrode import BufferPoint, CalibrationError, mv_from_ideal_ph
from agentchemist.hardware.instruments.port import SerialLine


@dataclass(frozen=True)
class StableReading:
    mv: float
    temperature_c: float
    spread_mv: float


def read_stable(line: SerialLine, clock: Callable[[], float], sleep: Callable[[float], None], *,
                window_s: float = 10.0, band_mv: float = 0.5, timeout_s: float = 180.0) -> StableReading:
    samples: deque = deque()
    start = clock()
    spread = float("inf")
    while clock() - start < timeout_s:
        now = clock()
        for parsed in line.service(now):
            got = {r.quantity: r for r in parsed.readings}
            temp = got.get("temperature")
            t_c = temp.value if temp is not None and temp.self_check_ok else 25.0
            if "mV" in got and got["mV"].self_check_ok:
                mv = got["mV"].value
            elif "pH" in got and got["pH"].self_check_ok:
                mv = mv_from_ideal_ph(got["pH"].value, t_c)
            else:
                continue
            samples.append((now, mv, t_c))
        while samples and now - samples[0][0] > window_s:
            samples.popleft()
        if len(samples) > 1 and now - samples[0][0] >= 0.9 * window_s:
            values = [s[1] for s in samples]
            spread = max(values) - min(values)
            if spread <= band_mv:
                return StableReading(sum(values) / len(values), sum(s[2] for s in samples) / len(samples), spread)
        sleep(0.02)
    raise CalibrationError(f"no stable reading within {timeout_s:g} s (spread {spread:.2f} mV over "
                           f"{window_s:g} s, needs <= {band_mv:g} mV): is the electrode in the buffer, "
                           "the meter sending?")


def measure_buffers(line: SerialLine, buffers, prompt: Callable[[float], None], clock, sleep,
                    **stable) -> list[BufferPoint]:
    """For each buffer: `prompt(buffer)` (the person moves the electrode), then a stable reading."""
    points = []
    for nominal in buffers:
        prompt(nominal)
        reading = read_stable(line, clock, sleep, **stable)
        points.append(BufferPoint(nominal, reading.mv, reading.temperature_c))
    return points
