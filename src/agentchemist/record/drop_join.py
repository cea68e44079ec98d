"""Per-drop titration table: each drop joined with the pH read once the supervisor declared it settled.

The paper's worked example asks to "record the pH value and the total volume ... after each drop" and not
to act while the pH is changing. The supervisor declares "settled" (symbol ``ph_stable``); the pH that
belongs to a drop is the first reading taken at or after that declaration. Every drop yields exactly one
row, even when no settled reading came (flagged, pH NaN), so the table never silently loses a drop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentchemist.record.errors import RecordConfigError

FLAG_INITIAL = "initial"
FLAG_SUPERSEDED = "superseded_before_settle"
FLAG_NO_PH = "no_ph_after_settle"
FLAG_UNSETTLED_AT_END = "unsettled_at_end"
FLAG_INVALID = "invalid_input"
FLAG_OUT_OF_ORDER = "out_of_order"


@dataclass(frozen=True)
class DropJoinConfig:
    """Attributes:
    max_wait_s: after a settle declaration, how long to wait for a pH reading before emitting the row
        without one (seconds, > 0).
    record_initial: emit a row with drop_index 0 and volume 0 for the first settled pH before any drop.
    """

    max_wait_s: float = 30.0
    record_initial: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.max_wait_s) and self.max_wait_s > 0):
            raise RecordConfigError(f"DropJoinConfig.max_wait_s must be > 0 s, got {self.max_wait_s!r}")


@dataclass(frozen=True)
class JoinedDrop:
    """One row of the per-drop table.

    Attributes:
        drop_index: 1, 2, ... for drops; 0 for the initial reading; -1 for a rejected drop event.
        drop_stamp: time of the drop, s.
        cumulative_volume: total volume dispensed after this drop (mL).
        ph: settled pH (NaN when none was obtained).
        ph_stamp: time of that pH reading, s (NaN when none).
        settle_stamp: when the supervisor declared the pH settled, s (NaN when never).
        flags: why a field is missing or the row is special (FLAG_* constants).
    """

    drop_index: int
    drop_stamp: float
    cumulative_volume: float
    ph: float
    ph_stamp: float
    settle_stamp: float
    flags: tuple[str, ...] = ()

    @property
    def settle_delay_s(self) -> float:
        """Seconds from the drop to the pH reading used for it (NaN when none)."""
        return self.ph_stamp - self.drop_stamp


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class DropJoiner:
    """Joins drops with settled pH readings. Every method returns the rows completed by that event.

    Example:
        >>> j = DropJoiner()
        >>> j.add_drop(0.046875, 10.0)
        []
        >>> j.mark_settled(13.0)
        []
        >>> [(r.drop_index, r.cumulative_volume, r.ph) for r in j.add_ph(13.2, 1.12)]
        [(1, 0.046875, 1.12)]
    """

    def __init__(self, config: DropJoinConfig = DropJoinConfig()) -> None:
        self.config = config
        self.rows: list[JoinedDrop] = []
        self._count = 0
        self._open: tuple[int, float, float] | None = None  # (index, stamp, volume) of the unjoined drop
        self._last_drop: tuple[float, float] | None = None  # (stamp, volume) of the last accepted drop
        self._settle_stamp: float | None = None  # declared settled, waiting for a reading
        self._initial_done = False

    def add_drop(self, cumulative_volume: float, stamp: float) -> list[JoinedDrop]:
        """A drop was dispensed: total volume after it (mL) at ``stamp`` (s)."""
        if not (_finite(cumulative_volume) and _finite(stamp) and cumulative_volume >= 0):
            return self._emit(JoinedDrop(-1, _as_float(stamp), _as_float(cumulative_volume),
                                         math.nan, math.nan, math.nan, (FLAG_INVALID,)))
        if self._last_drop is not None and (
            stamp <= self._last_drop[0] or cumulative_volume < self._last_drop[1]
        ):
            return self._emit(JoinedDrop(-1, float(stamp), float(cumulative_volume),
                                         math.nan, math.nan, math.nan, (FLAG_OUT_OF_ORDER,)))
        done: list[JoinedDrop] = []
        if self._open is not None:
            index, drop_stamp, volume = self._open
            settle = self._settle_stamp if self._settle_stamp is not None else math.nan
            flags = (FLAG_SUPERSEDED,) if self._settle_stamp is None else (FLAG_NO_PH,)
            done += self._emit(JoinedDrop(index, drop_stamp, volume, math.nan, math.nan, settle, flags))
        self._count += 1
        self._open = (self._count, float(stamp), float(cumulative_volume))
        self._last_drop = (float(stamp), float(cumulative_volume))
        self._settle_stamp = None
        return done

    def mark_settled(self, stamp: float) -> list[JoinedDrop]:
        """The supervisor declared the pH settled at ``stamp``; the next reading at/after it is used."""
        if not _finite(stamp):
            return []
        if self._open is not None and stamp < self._open[1]:
            return []  # a declaration about the state before the open drop: not this drop's pH
        if self._open is None and (self._initial_done or not self.config.record_initial):
            return []
        if self._settle_stamp is None:
            self._settle_stamp = float(stamp)
        return []

    def settled(self, stamp: float, ph: float) -> list[JoinedDrop]:
        """A settle declaration that carries its pH reading."""
        self.mark_settled(stamp)
        return self.add_ph(stamp, ph)

    def add_ph(self, stamp: float, ph: float) -> list[JoinedDrop]:
        """A pH reading; joined when a settle declaration is pending and it is not older than it."""
        if self._settle_stamp is None or not (_finite(stamp) and _finite(ph)):
            return []
        if stamp < self._settle_stamp:
            return []
        settle = self._settle_stamp
        self._settle_stamp = None
        if self._open is None:
            self._initial_done = True
            return self._emit(JoinedDrop(0, settle, 0.0, float(ph), float(stamp), settle, (FLAG_INITIAL,)))
        index, drop_stamp, volume = self._open
        self._open = None
        return self._emit(JoinedDrop(index, drop_stamp, volume, float(ph), float(stamp), settle))

    def poll(self, now: float) -> list[JoinedDrop]:
        """Emit the open drop without pH when a settle declaration waited longer than ``max_wait_s``."""
        if self._settle_stamp is None or now - self._settle_stamp <= self.config.max_wait_s:
            return []
        settle = self._settle_stamp
        self._settle_stamp = None
        if self._open is None:
            return []
        index, drop_stamp, volume = self._open
        self._open = None
        return self._emit(JoinedDrop(index, drop_stamp, volume, math.nan, math.nan, settle, (FLAG_NO_PH,)))

    def finish(self, now: float) -> list[JoinedDrop]:
        """End of the titration: emit the open drop, if any, with what is known."""
        done = self.poll(now)
        if self._open is not None:
            index, drop_stamp, volume = self._open
            settle = self._settle_stamp if self._settle_stamp is not None else math.nan
            done += self._emit(JoinedDrop(index, drop_stamp, volume, math.nan, math.nan, settle,
                                          (FLAG_UNSETTLED_AT_END,)))
            self._open = None
            self._settle_stamp = None
        return done

    def _emit(self, row: JoinedDrop) -> list[JoinedDrop]:
        self.rows.append(row)
        return [row]


def _as_float(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
