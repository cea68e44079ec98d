"""One instrument on one serial line: framing, polling, deadline and connection bookkeeping, no I/O.

The node owns the port (pyserial) and the timer; it hands this object the bytes it read, sends the bytes
`poll` returns, and reports when the port failed or reopened. Everything here takes `now` (seconds on
the node's clock). What happened goes to `events` as `LinkEvent`s, each once per change of state (a
broken cable gives one `instrument_disconnected`, not one per retry), for the node to log and publish:

- ``instrument_disconnected`` (warn) / resolved on reconnect;
- ``sensor_timeout`` (warn): no valid reading for ``deadline_s`` while connected or not (a device that
  stopped answering or a pulled cable); resolved by the next reading;
- ``malformed_input`` (info): damaged or unparsable frames, at most one event per ``report_period_s``
  with the count, so a noisy line cannot flood the anomaly topic.
"""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.hardware.instruments.framing import LineFramer
from agentchemist.hardware.instruments.readings import Parsed


@dataclass(frozen=True)
class LinkEvent:
    kind: str
    severity: str          # info | warn | halt
    description: str
    resolved: bool = False


@dataclass
class LinkStats:
    frames: int = 0
    readings: int = 0
    malformed: int = 0
    no_answer: int = 0
    reconnects: int = 0


class InstrumentLink:
    def __init__(self, dialect, *, name: str, deadline_s: float = 3.0, poll_period_s: float = 0.5,
                 answer_timeout_s: float = 1.0, report_period_s: float = 10.0) -> None:
        self.dialect = dialect
        self.name = name
        self.deadline_s = deadline_s
        self.poll_period_s = poll_period_s
        self.answer_timeout_s = answer_timeout_s
        self.report_period_s = report_period_s
        self.framer = LineFramer(stx_etx=dialect.stx_etx)
        self.stats = LinkStats()
        self.events: list[LinkEvent] = []
        self.connected = False
        self.started: float | None = None
        self.last_reading: float | None = None
        self._next_poll = 0.0
        self._awaiting: float | None = None       # when the last request went out without an answer yet
        self._timed_out = False
        self._disconnect_reported = False
        self._unreported_malformed = 0
        self._last_malformed_report = -1e18
        self._last_problem = ""

    # ---------------------------------------------------------------- connection
    def start(self, now: float) -> None:
        self.started = now

    def on_connected(self, now: float, port: str) -> None:
        if self.started is None:
            self.started = now
        self.framer.reset()
        self.connected = True
        self._awaiting = None
        self._next_poll = now
        if self._disconnect_reported:
            self.stats.reconnects += 1
            self._disconnect_reported = False
            self.events.append(LinkEvent("instrument_disconnected", "info",
                                         f"{self.name}: serial port {port} open again", resolved=True))

    def on_disconnected(self, now: float, why: str) -> None:
        was = self.connected
        self.connected = False
        self._awaiting = None
        if was or not self._disconnect_reported:
            if not self._disconnect_reported:
                self._disconnect_reported = True
                self.events.append(LinkEvent("instrument_disconnected", "warn",
                                             f"{self.name}: serial port lost ({why}); reopening"))

    # ---------------------------------------------------------------- traffic
    def poll(self, now: float) -> bytes:
        """The request to send now ('' when the dialect talks on its own or it is not yet time)."""
        if not self.connected or not self.dialect.request:
            return b""
        if self._awaiting is not None:
            if now - self._awaiting < self.answer_timeout_s:
                return b""
            self.stats.no_answer += 1      # no answer in time: ask again (a lost request or a lost answer)
            self._awaiting = None
        if now < self._next_poll:
            return b""
        self._awaiting = now
        self._next_poll = now + self.poll_period_s
        return self.dialect.request

    def on_bytes(self, data: bytes, now: float) -> list[Parsed]:
        """Frames in `data` parsed; damaged and malformed ones are counted (and reported at a bounded rate)."""
        out = []
        for frame in self.framer.feed(data):
            self.stats.frames += 1
            if frame.damaged:
                self._malformed(now, f"damaged frame ({frame.why})")
                continue
            parsed = self.dialect.parse(frame.text)
            self._awaiting = None
            if parsed.readings:
                self.stats.readings += 1
                self.last_reading = now
                if self._timed_out:
                    self._timed_out = False
                    self.events.append(LinkEvent("sensor_timeout", "info",
                                                 f"{self.name}: readings again", resolved=True))
            elif parsed.problem and not parsed.reply:
                self._malformed(now, parsed.problem)
            out.append(parsed)
        self._flush_malformed(now)
        return out

    def check(self, now: float) -> None:
        """Raise `sensor_timeout` once when the newest reading is older than the deadline."""
        since = self.last_reading if self.last_reading is not None else self.started
        if since is None or self._timed_out:
            return
        if now - since > self.deadline_s:
            self._timed_out = True
            state = "connected but silent" if self.connected else "port closed"
            self.events.append(LinkEvent("sensor_timeout", "warn",
                                         f"{self.name}: no valid reading for {now - since:.1f} s "
                                         f"(deadline {self.deadline_s:g} s; {state})"))
        self._flush_malformed(now)

    def drain_events(self) -> list[LinkEvent]:
        events, self.events = self.events, []
        return events

    def _malformed(self, now: float, problem: str) -> None:
        self.stats.malformed += 1
        self._unreported_malformed += 1
        self._last_problem = problem

    def _flush_malformed(self, now: float) -> None:
        if self._unreported_malformed and now - self._last_malformed_report >= self.report_period_s:
            self.events.append(LinkEvent("malformed_input", "info",
                                         f"{self.name}: {self._unreported_malformed} bad frame(s) ignored; "
                                         f"last: {self._last_problem}"))
            self._unreported_malformed = 0
            self._last_malformed_report = now
