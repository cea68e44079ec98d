"""The Piper's 200 Hz exchange on its own thread, on a monotonic-clock schedule, apart from ROS.

Why not an rclpy timer: the executor runs every callback of the node (and, in a multi-node process, of
the others) on the same thread, so one slow callback or a garbage collection delays the CAN exchange;
a timer's period is also measured from when the callback ran, not from a fixed schedule, so lateness
accumulates. Here the cycle k starts at ``t0 + k / rate_hz`` of ``clock`` (``time.monotonic``): a late
cycle does not shift the ones after it, and a cycle missed entirely is skipped and counted, never
bunched into a burst of frames.

The ROS side never touches the driver. Hand-offs, all bounded and none blocking the loop for longer
than a lock held for one assignment:

- ``commands``: a deque of at most ``COMMAND_QUEUE`` entries (ROS -> loop), taken in order at the start of
  each cycle; if the loop stalls, the oldest commands fall off (the newest wins, as it should);
- ``requests``: e-stop / resume (ROS -> loop), same;
- ``latest``: a :class:`LatestSlot` with the newest joint state (loop -> ROS), newest wins;
- ``events``: a deque of at most ``EVENT_QUEUE`` driver events (loop -> ROS); overflow is counted in
  ``events_dropped``;
- ``diagnostics``: a LatestSlot with the motor drivers' reports, refreshed every ``diagnostics_period_s``.

After each cycle ``notify()`` is called (the node passes a guard condition's ``trigger``, which wakes
the executor from this thread), so the ROS side publishes as soon as a cycle ends, without polling.

With ``rt_priority`` > 0 the thread asks for SCHED_FIFO at that priority (a robot's PREEMPT_RT kernel
with an rtprio limit for the user); refused, it runs on the normal scheduler and says so in ``rt_note``.
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from agentchemist.hardware.piper.driver import DriverEvent, JointStateReading, PiperDriver

T = TypeVar("T")
COMMAND_QUEUE = 8
EVENT_QUEUE = 256


class LatestSlot(Generic[T]):
    """One value, newest wins, read by another thread; ``seq`` counts the puts."""

    def __init__(self):
        self._lock = threading.Lock()
        self._value: T | None = None
        self.seq = 0

    def put(self, value: T) -> None:
        with self._lock:
            self._value = value
            self.seq += 1

    def get(self) -> tuple[T | None, int]:
        with self._lock:
            return self._value, self.seq


@dataclass(frozen=True)
class Command:
    arm_rad: tuple[float, ...] | None      # None: refused by the ROS side, ``error`` says why
    gripper_m: float | None
    error: str = ""
    put_at: float = 0.0                    # the loop clock when it was queued (command-to-frame latency)


@dataclass(frozen=True)
class Cycle:
    state: JointStateReading | None
    now: float                             # the cycle's start on the loop clock


class DriverLoop:
    def __init__(self, driver: PiperDriver, rate_hz: float = 200.0, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, notify: Callable[[], None] | None = None,
                 rt_priority: int = 0, diagnostics_period_s: float = 1.0, timing_samples: int = 200_000):
        if not 1.0 <= rate_hz <= 2000.0:
            raise ValueError(f"rate_hz {rate_hz} is outside 1..2000")
        self.driver = driver
        self.period = 1.0 / rate_hz
        self.clock = clock
        self.sleep = sleep          # time.sleep: clock_nanosleep on Linux, no busy wait on a shared machine
        self.notify = notify or (lambda: None)
        self.rt_priority = rt_priority
        self.rt_note = ""
        self.diagnostics_period_s = diagnostics_period_s
        self.commands: deque[Command] = deque(maxlen=COMMAND_QUEUE)
        self.requests: deque[str] = deque(maxlen=COMMAND_QUEUE)
        self.latest: LatestSlot[Cycle] = LatestSlot()
        self.diagnostics: LatestSlot[list] = LatestSlot()
        self.events: deque[DriverEvent] = deque(maxlen=EVENT_QUEUE)
        self.events_dropped = 0
        self.cycles = 0
        self.missed = 0                     # whole periods skipped because a cycle ran that late
        self.starts: deque[float] = deque(maxlen=timing_samples)   # each cycle's actual start (clock)
        self.lateness: deque[float] = deque(maxlen=timing_samples)  # actual start - scheduled start, s
        self.command_latency: deque[float] = deque(maxlen=timing_samples)  # queued -> applied (frame sent), s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"piper-{driver.config.side}-loop", daemon=True)

    # ------------------------------------------------------------------------------------ ROS side
    def command(self, arm_rad, gripper_m) -> None:
        self.commands.append(Command(tuple(arm_rad), gripper_m, put_at=self.clock()))

    def refuse(self, error: str) -> None:
        self.commands.append(Command(None, None, error, put_at=self.clock()))

    def request(self, what: str) -> None:
        if what not in ("emergency_stop", "resume"):
            raise ValueError(f"unknown request {what!r}")
        self.requests.append(what)

    def drain_events(self) -> list[DriverEvent]:
        out = []
        while True:
            try:
                out.append(self.events.popleft())
            except IndexError:
                return out

    # ------------------------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _set_priority(self) -> None:
        if self.rt_priority <= 0:
            return
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(self.rt_priority))
            self.rt_note = f"SCHED_FIFO priority {self.rt_priority}"
        except (OSError, AttributeError) as exc:
            self.rt_note = f"SCHED_FIFO {self.rt_priority} refused ({exc}); normal scheduling"

    def _run(self) -> None:
        self._set_priority()
        next_start = self.clock()
        next_diag = next_start
        while not self._stop.is_set():
            now = self.clock()
            self.starts.append(now)
            self.lateness.append(now - next_start)
            self.cycle(now)
            if now >= next_diag:
                self.diagnostics.put(self.driver.health.reports(now))
                next_diag = now + self.diagnostics_period_s
            self.notify()
            next_start += self.period
            late = self.clock() - next_start
            if late > self.period:          # skip whole missed periods: no burst to catch up
                skipped = int(late // self.period)
                self.missed += skipped
                next_start += skipped * self.period
            delay = next_start - self.clock()
            if delay > 0:
                self.sleep(delay)

    def cycle(self, now: float) -> None:
        """One exchange: apply what ROS queued, step the driver, hand the results back."""
        applied = []
        while True:
            try:
                cmd = self.commands.popleft()
            except IndexError:
                break
            if cmd.arm_rad is None:
                self.driver.refuse(cmd.error)
            else:
                self.driver.command(cmd.arm_rad, cmd.gripper_m, now)
                applied.append(cmd.put_at)
        while True:
            try:
                what = self.requests.popleft()
            except IndexError:
                break
            getattr(self.driver, what)(now)
        state = self.driver.step(now)
        if applied:
            done = self.clock()
            self.command_latency.extend(done - t for t in applied)
        self.cycles += 1
        self.latest.put(Cycle(state, now))
        for event in self.driver.drain_events():
            if len(self.events) == self.events.maxlen:
                self.events_dropped += 1
            self.events.append(event)
