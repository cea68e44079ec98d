"""The run depends on its record: the supervisor's watch on the recorder, free of ROS.

The recorder publishes a status (agentchemist_interfaces/RecorderStatus) when it opens an experiment's
store and then periodically: which experiment it records and the stamp of the newest input it has made
durable. The watch turns those into decisions, with `now` the supervisor's (sim) clock:

* nothing moves before the recorder has acknowledged the plan (its status names the experiment and says
  it records), so the record starts at t = 0 whichever process the recorder runs in; no acknowledgement
  within ``ack_wait_s``: the run aborts with ``recorder_unavailable``;
* silent for ``stale_s``, or its newest durable input more than ``lag_s`` behind `now`: dispensing is
  held (``recorder_lost``, warn) - nothing the record would miss happens while it is gone;
* back (a fresh status for this experiment, caught up): dispensing goes on, the anomaly is resolved with
  the gap it left (from its last status to its return), which the restarted recorder stores;
* gone for ``lost_abort_s``: the run aborts with ``recorder_lost``.

The gaps are kept: each is a ``record_gap`` anomaly when the recorder is back, and a run with one is not a
success (its record is incomplete, whatever the chemistry did).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agentchemist.fsm.node_watch import watcher_away
from agentchemist.params import param


@dataclass(frozen=True)
class RecordWatchConfig:
    """When the recorder counts as gone, behind or never there (seconds of the supervisor's clock)."""

    stale_s: float = param(3.0, unit="s", low=0.5, high=120.0, description=(
        "No recorder status this long while an experiment runs: dispensing is held (recorder_lost)"))
    lag_s: float = param(5.0, unit="s", low=0.5, high=300.0, description=(
        "The recorder's newest durable input this far behind the clock: held as falling behind"))
    ack_wait_s: float = param(30.0, unit="s", low=1.0, high=600.0, description=(
        "Wait this long for the recorder to acknowledge a plan before the run aborts (recorder_unavailable)"))
    lost_abort_s: float = param(120.0, unit="s", low=1.0, high=3600.0, description=(
        "Recorder gone this long during a run: it aborts (recorder_lost)"))


@dataclass(frozen=True)
class Gap:
    """An interval of the run (the supervisor's clock) from which the record may miss inputs."""
    start: float
    end: float

    def __str__(self) -> str:
        return f"{self.start:.1f}-{self.end:.1f} s"


@dataclass
class RecordWatch:
    """One experiment's watch on its recorder. Feed `on_status` and `check`; read the verdicts."""

    experiment_id: str
    since: float                               #: when the plan arrived (the acknowledgement wait starts)
    config: RecordWatchConfig = field(default_factory=RecordWatchConfig)
    last_seen: float | None = None             #: `now` of the last status for this experiment (None: not acked)
    stored_through: float = 0.0                #: the recorder's newest durable input (its stamp)
    lost_since: float | None = None            #: the start of the current gap (None: recording)
    gaps: list[Gap] = field(default_factory=list)
    last_check: float | None = None            #: `now` of the last `check` (the watcher's own liveness)

    def on_status(self, experiment_id: str, recording: bool, stored_through: float, now: float) -> str:
        """A recorder status. Returns 'acked' (the first acknowledgement), 'back' (a gap ended) or ''."""
        if experiment_id != self.experiment_id or not recording:
            return ""
        first = not self.acked
        self.last_seen = now
        self.stored_through = max(self.stored_through, stored_through)
        if first:
            return "acked"
        if self.lost_since is not None and not self._behind(now):
            self.gaps.append(Gap(self.lost_since, now))
            self.lost_since = None
            return "back"
        return ""

    def check(self, now: float) -> str:
        """The timer: 'abort_unacked', 'lost' (a gap starts), 'abort_lost' or ''."""
        away = watcher_away(self.last_check, now, self.config.stale_s)
        self.last_check = now
        if away and self.last_seen is not None and self.lost_since is None:
            # the supervisor itself was away: the recorder's statuses of that time are still queued
            self.last_seen += away
            self.stored_through += away if self.stored_through > 0.0 else 0.0
        if not self.acked:
            return "abort_unacked" if now - self.since > self.config.ack_wait_s else ""
        if self.lost_since is None:
            if now - self.last_seen > self.config.stale_s or self._behind(now):
                self.lost_since = self.last_seen
                return "lost"
            return ""
        return "abort_lost" if now - self.lost_since > self.config.lost_abort_s else ""

    @property
    def acked(self) -> bool:
        """The recorder has acknowledged the plan (a status for this experiment arrived)."""
        return self.last_seen is not None

    def _behind(self, now: float) -> bool:
        return self.stored_through > 0.0 and now - self.stored_through > self.config.lag_s

    def why_lost(self, now: float) -> str:
        if self.last_seen is not None and now - self.last_seen > self.config.stale_s:
            return f"no recorder status for {now - self.last_seen:.1f} s"
        return f"the recorder's newest stored input is {now - self.stored_through:.1f} s old"
