"""The serial port under an `InstrumentLink`: pyserial, opened by path, reopened after a failure.

A pulled USB-serial cable makes reads fail (pyserial raises SerialException, the OS says EIO) and the
device node disappears until it is plugged in again; a udev link (/dev/serial/by-id/...) then points at
the new node. `SerialLine.service(now)` reads what is there without blocking, and while the port is
closed tries to reopen it every `reconnect_period_s`; it tells the link each change.
"""
from __future__ import annotations

import serial

from agentchemist.hardware.instruments.link import InstrumentLink
from agentchemist.hardware.instruments.readings import Parsed


class SerialLine:
    def __init__(self, link: InstrumentLink, port: str, *, baud: int = 9600,
                 reconnect_period_s: float = 1.0) -> None:
        self.link = link
        self.port_name = port
        self.baud = baud
        self.reconnect_period_s = reconnect_period_s
        self.port: serial.Serial | None = None
        self._next_try = 0.0

    def service(self, now: float) -> list[Parsed]:
        """Reopen if due, send a due request, read and parse what arrived; check the deadline."""
        parsed: list[Parsed] = []
        if self.port is None and now >= self._next_try:
            self._open(now)
        if self.port is not None:
            try:
                request = self.link.poll(now)
                if request:
                    self.port.write(request)
                waiting = self.port.in_waiting
                if waiting:
                    parsed = self.link.on_bytes(self.port.read(waiting), now)
            except (serial.SerialException, OSError) as exc:
                self._lost(now, str(exc) or type(exc).__name__)
        self.link.check(now)
        return parsed

    def write(self, data: bytes, now: float) -> bool:
        if self.port is None:
            return False
        try:
            self.port.write(data)
            return True
        except (serial.SerialException, OSError) as exc:
            self._lost(now, str(exc) or type(exc).__name__)
            return False

    def close(self) -> None:
        if self.port is not None:
            try:
                self.port.close()
            except (serial.SerialException, OSError):
                pass
            self.port = None

    def _open(self, now: float) -> None:
        try:
            port = serial.Serial(self.port_name, self.baud, bytesize=8, parity="N", stopbits=1, timeout=0,
                                 write_timeout=0.5)
            port.reset_input_buffer()     # bytes queued while nobody listened belong to no request
        except (serial.SerialException, OSError, ValueError) as exc:
            self._next_try = now + self.reconnect_period_s
            self.link.on_disconnected(now, f"cannot open {self.port_name}: {exc}")
            return
        self.port = port
        self.link.on_connected(now, self.port_name)

    def _lost(self, now: float, why: str) -> None:
        self.close()
        self._next_try = now + self.reconnect_period_s
        self.link.on_disconnected(now, why)
