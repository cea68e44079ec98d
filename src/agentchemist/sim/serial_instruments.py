"""Simulated instruments on the far end of a real serial line (a pseudo-terminal pair).

Each device opens a pty pair, keeps the slave end in raw mode and points a stable symlink at it (as udev
points /dev/serial/by-id/... at /dev/ttyUSBn); the driver under test opens that link with pyserial, exactly
as it opens a USB adapter on the robot. A thread on the master end speaks the instrument's dialect,
answering requests and sending continuous lines, with values from a `source` callable (the twin's probe
and balance in `instruments:=serial` mode, or a test's script).

The line can be made to misbehave: `inject` writes raw bytes (garbage), `split_next` sends the next line
in two writes with a pause between, `pull_cable` closes the pty (the driver's reads fail as on an
unplugged USB adapter) and `plug_in` opens a new one behind the same link, `mute` makes the device stop
answering and sending while the line stays up.

The line formats are written here independently of the drivers' parsers (agentchemist.hardware.
instruments), so a test through the pty checks one against the other.
"""
from __future__ import annotations

import os
import select
import threading
import time
import tty
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

STX, ETX = b"\x02", b"\x03"


@dataclass
class PhValues:
    ph: float
    temperature_c: float
    mv: float | None = None        # None: the ideal electrode's potential is computed from the pH


@dataclass
class MassValues:
    grams: float
    stable: bool
    overload: bool = False


class PtyDevice:
    """Base: the pty pair, the symlink, the thread and the faults; subclasses say what to send."""
    period_s = 0.0          # > 0: send `emit()` on its own every period (continuous output)

    def __init__(self, link_path: str | Path, *, period_s: float | None = None) -> None:
        self.link_path = Path(link_path)
        if period_s is not None:
            self.period_s = period_s
        self._lock = threading.Lock()
        self._master: int | None = None
        self._slave: int | None = None
        self._muted = False
        self._split_next = False
        self._stop = threading.Event()
        self._rx = bytearray()
        self.requests: list[str] = []
        self.sent_lines: list[bytes] = []
        self.plug_in()
        self._thread = threading.Thread(target=self._run, name=f"pty-{self.link_path.name}", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ faults
    def plug_in(self) -> None:
        with self._lock:
            master, slave = os.openpty()
            tty.setraw(slave)
            os.set_blocking(master, False)
            tmp = self.link_path.with_name(self.link_path.name + ".new")
            if tmp.is_symlink() or tmp.exists():
                tmp.unlink()
            os.symlink(os.ttyname(slave), tmp)
            os.replace(tmp, self.link_path)
            self._master, self._slave = master, slave
            self._rx.clear()

    def pull_cable(self) -> None:
        with self._lock:
            for fd in (self._master, self._slave):
                if fd is not None:
                    os.close(fd)
            self._master = self._slave = None

    def mute(self, muted: bool = True) -> None:
        self._muted = muted

    def inject(self, data: bytes) -> None:
        self._write(data)

    def split_next(self) -> None:
        self._split_next = True

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.pull_cable()
        if self.link_path.is_symlink():
            self.link_path.unlink()

    # ------------------------------------------------------------------ what to send (subclasses)
    def emit(self) -> bytes:
        return b""

    def answer(self, request: str) -> bytes:
        return b""

    request_end = b"\r"

    # ------------------------------------------------------------------ the thread
    def _send_line(self, data: bytes) -> None:
        if not data or self._muted:
            return
        self.sent_lines.append(data)
        if self._split_next and len(data) > 2:
            self._split_next = False
            half = len(data) // 2
            self._write(data[:half])
            time.sleep(0.05)
            self._write(data[half:])
        else:
            self._write(data)

    def _write(self, data: bytes) -> None:
        with self._lock:
            if self._master is None:
                return
            try:
                os.write(self._master, data)
            except (BlockingIOError, OSError):
                pass        # nobody reading and the tty buffer full: the bytes are lost, as on a real line

    def _run(self) -> None:
        next_emit = time.monotonic()
        while not self._stop.is_set():
            master = self._master
            timeout = 0.02
            if master is None:
                time.sleep(timeout)
                continue
            try:
                ready, _, _ = select.select([master], [], [], timeout)
                data = os.read(master, 4096) if ready else b""
            except (OSError, ValueError):
                data = b""
            if data:
                self._rx.extend(data)
                while True:
                    end = self._rx.find(self.request_end)
                    if end < 0:
                        break
                    request = self._rx[:end].decode("latin-1").strip("\r\n")
                    del self._rx[:end + len(self.request_end)]
                    self.requests.append(request)
                    if not self._muted:
                        self._send_line(self.answer(request))
            if self.period_s > 0 and time.monotonic() >= next_emit:
                next_emit = time.monotonic() + self.period_s
                self._send_line(self.emit())


class TpsPhMeter(PtyDevice):
    """TPS 901-PH style: a line every `period_s` (6-char value, unit, 2 spaces, 6-char temperature, oC)."""
    period_s = 0.2

    def __init__(self, link_path, source: Callable[[], PhValues], **kw) -> None:
        self.source = source
        super().__init__(link_path, **kw)

    def emit(self) -> bytes:
        v = self.source()
        if v.ph > 99.99 or v.ph < -9.99:
            value = "+OVR" if v.ph > 0 else "-OVR"
            return f"{value:>6}pH  {v.temperature_c:6.1f}oC\r\n".encode()
        return f"{v.ph:6.2f}pH  {v.temperature_c:6.1f}oC\r\n".encode()


class HannaPhMeter(PtyDevice):
    """Hanna RAS answers: STX, mode 01, status 10 (probe connected), RR, pH, mV, temperature, checksum, ETX."""

    def __init__(self, link_path, source: Callable[[], PhValues], **kw) -> None:
        self.source = source
        super().__init__(link_path, **kw)

    def answer(self, request: str) -> bytes:
        if request != "16RAS":
            return b""          # Hanna meters ignore commands they do not know
        v = self.source()
        mv = v.mv if v.mv is not None else -0.19841 * (v.temperature_c + 273.15) * (v.ph - 7.0)
        status = ("O" if v.ph > 16 else "U" if v.ph < -2 else "R") + "R"
        body = f"0110{status}{v.ph:+7.2f}{mv:+7.1f}{v.temperature_c:+8.2f}"
        checksum = f"{sum(body.encode()) % 256:02X}"
        return STX + (body + checksum).encode() + ETX


class MtSicsBalance(PtyDevice):
    """MT-SICS level 0: S, SI, T, Z (CR LF), the answers of the Mettler reference manual's layout."""
    request_end = b"\n"

    def __init__(self, link_path, source: Callable[[], MassValues], tare: Callable[[], float] | None = None,
                 zero: Callable[[], None] | None = None, **kw) -> None:
        self.source, self.tare_cb, self.zero_cb = source, tare, zero
        self.busy = False           # answer T I / Z I / S I (taring, no stability)
        super().__init__(link_path, **kw)

    def answer(self, request: str) -> bytes:
        v = self.source()
        if request in ("S", "SI"):
            if v.overload:
                return b"S +\r\n"
            if request == "S" and (self.busy or not v.stable):
                return b"S I\r\n"
            status = "S" if v.stable else "D"
            return f"S {status} {v.grams:10.2f} g\r\n".encode()
        if request == "T":
            if self.busy or not v.stable:
                return b"T I\r\n"
            if v.overload:
                return b"T +\r\n"
            tare_g = self.tare_cb() if self.tare_cb else v.grams
            if tare_g is None:
                return b"T I\r\n"
            return f"T S {tare_g:10.2f} g\r\n".encode()
        if request == "Z":
            if self.busy or not v.stable:
                return b"Z I\r\n"
            if self.zero_cb:
                self.zero_cb()
            return b"Z A\r\n"
        return b"ES\r\n"


class SbiBalance(PtyDevice):
    """Sartorius SBI auto print: sign, value, unit (blank while unstable); ESC T tares."""
    period_s = 0.2
    request_end = b"\n"

    def __init__(self, link_path, source: Callable[[], MassValues], tare: Callable[[], float] | None = None,
                 **kw) -> None:
        self.source, self.tare_cb = source, tare
        super().__init__(link_path, **kw)

    def emit(self) -> bytes:
        v = self.source()
        if v.overload:
            return b"High\r\n"
        sign = "-" if v.grams < 0 else "+"
        unit = "g  " if v.stable else "   "
        return f"{sign}{abs(v.grams):9.2f} {unit}\r\n".encode()

    def answer(self, request: str) -> bytes:
        if request.strip("\r") == "\x1bT" and self.tare_cb:
            self.tare_cb()
        return b""


class SerialBench:
    """The twin's pH meter and balance behind pty devices (lab_sim with instruments:=serial).

    The twin is stepped only on lab_sim's thread, so the devices never call into it: each lab_sim tick
    (`tick`) hands over the readings lab_sim would have published (`update_ph`, `update_mass`; None = the
    instrument is silent, a dropout or no balance on this bench, and the device goes quiet), and a tare the
    balance receives is answered at once and carried out on the twin at the next tick. The ph_meter and
    balance driver nodes open `folder/ph_meter` and `folder/balance`."""

    def __init__(self, folder: str | Path, *, ph_dialect: str = "tps_continuous", balance_dialect: str = "mt_sics",
                 period_s: float = 0.05, twin=None, streams=None) -> None:
        self.twin, self.streams = twin, streams
        self._closed = False
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.ph = PhValues(7.0, 25.0)
        self.mass = MassValues(0.0, True)
        self._tares = 0      # tares received, not yet carried out on the twin
        self._tare_lock = threading.Lock()
        ph_cls = {"tps_continuous": TpsPhMeter, "hanna_ras": HannaPhMeter}[ph_dialect]
        self.ph_device = ph_cls(self.folder / "ph_meter", lambda: self.ph, period_s=period_s)
        self.ph_device.mute(True)
        if balance_dialect == "mt_sics":
            self.balance_device = MtSicsBalance(self.folder / "balance", lambda: self.mass, tare=self._tare,
                                                zero=self._tare)
        else:
            self.balance_device = SbiBalance(self.folder / "balance", lambda: self.mass, tare=self._tare,
                                             period_s=period_s)
        self.balance_device.mute(True)

    def update_ph(self, reading, temperature) -> None:
        if reading is None:
            self.ph_device.mute(True)
            return
        t_c = temperature.value if temperature is not None else self.ph.temperature_c
        self.ph = PhValues(float(reading.value), float(t_c))
        self.ph_device.mute(False)

    def update_mass(self, reading, settled: bool = True) -> None:
        if reading is None:
            self.balance_device.mute(True)
            return
        self.mass = MassValues(float(reading.value), settled, overload=not reading.self_check_ok)
        self.balance_device.mute(False)

    def _tare(self) -> float | None:
        """The balance answers at once with the weight it tares (the last display); the twin's tare is
        applied on lab_sim's next tick. Never waiting here keeps a single-threaded one-process graph, whose
        balance driver waits for this answer, from stalling the tick that would carry the tare out."""
        with self._tare_lock:
            self._tares += 1
        return self.mass.grams

    def tick(self, t: float) -> list:
        """On lab_sim's thread (the only one that steps the twin), every tick: the readings whose stream is
        due (taken here, so lab_sim's own publishing of them finds nothing due), and the tares the balance
        received since the last tick. Returns log lines (level, text) as lab_sim's other per-tick effects do."""
        twin, streams, log = self.twin, self.streams, []
        ph_due = balance_due = False
        while streams.due("ph", t):
            ph_due = True
        while streams.due("balance", t):
            balance_due = True
        if ph_due:
            self.update_ph(twin.read_ph(t), twin.read_temperature(t))
        if balance_due:
            self.update_mass(twin.read_balance(t))
        with self._tare_lock:
            pending, self._tares = self._tares, 0
        for _ in range(pending):
            result = twin.tare_balance(t)
            self.mass = MassValues(0.0, self.mass.stable, self.mass.overload)
            log.append(("info", f"simulated balance tared at {t:.2f} s (accepted: {result.accepted})"))
        return log

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.ph_device.close()
            self.balance_device.close()


class _NoSerialBench:
    """lab_sim with instruments topics: nothing on ptys, nothing to do each tick."""

    def __bool__(self) -> bool:
        return False

    def tick(self, t: float) -> list:
        return []

    def close(self) -> None:
        pass


NO_SERIAL_BENCH = _NoSerialBench()
