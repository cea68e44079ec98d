"""Per-stream timestamp order: out-of-order or non-finite stamps are flagged, never silently fused.

:func:`agentchemist.record.fusion.fuse` is a pure function of one time slice, so it cannot see that an
estimate arrived late. The recorder keeps one :class:`StampOrder` and asks it about every incoming
estimate (key = channel, or channel + quantity): a stamp that is not later than the last accepted one
for the same key is stored as raw with the returned reason as a flag and kept out of fusion.
"""

from __future__ import annotations

import math

REASON_INVALID_STAMP = "invalid_stamp"
REASON_OUT_OF_ORDER = "out_of_order"


class StampOrder:
    """Remembers the last accepted stamp per key.

    Example:
        >>> order = StampOrder()
        >>> order.check("audio", 10.0), order.check("audio", 9.5), order.check("statistical", 9.5)
        (None, 'out_of_order', None)
    """

    def __init__(self) -> None:
        self._last: dict[str, float] = {}

    def check(self, key: str, stamp: float) -> str | None:
        """None when ``stamp`` (s) is later than the key's last accepted stamp (and then remember it),
        otherwise the reason to exclude it: "invalid_stamp" or "out_of_order"."""
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp):
            return REASON_INVALID_STAMP
        last = self._last.get(key)
        if last is not None and stamp <= last:
            return REASON_OUT_OF_ORDER
        self._last[key] = float(stamp)
        return None

    def last(self, key: str) -> float | None:
        """Last accepted stamp for ``key`` (None before the first)."""
        return self._last.get(key)

    def reset(self, key: str | None = None) -> None:
        """Forget one key (or all), e.g. when a new experiment starts."""
        if key is None:
            self._last.clear()
        else:
            self._last.pop(key, None)
