"""Typed errors raised by the recorder core.

Data problems inside a measurement stream (a NaN reading, a confidence of 1.3) are *not* errors: the
fusion and filter functions flag and exclude them so that nothing recorded is lost. The errors below are
for misuse of the API (bad configuration, a record with a missing experiment, a non-finite timestamp)
and for storage that cannot make data durable.
"""

from __future__ import annotations


class RecordConfigError(ValueError):
    """A recorder configuration value is invalid (the message names the field and the allowed range)."""


class RecordInputError(ValueError):
    """A value handed to a store or joiner cannot be recorded as given (the message names the field)."""


class UnknownExperimentError(RecordInputError):
    """A record names an experiment that was never started in this store."""


class StoreError(RuntimeError):
    """Base class for storage failures."""


class StoreClosedError(StoreError):
    """The store was closed; no more records are accepted."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached or opened (connection refused, unwritable path)."""


class StoreDamagedError(StoreError):
    """The database file fails SQLite's own check on open (``PRAGMA quick_check``): zeroed or torn pages.

    Not an outage to wait out: writing on would acknowledge rows that cannot be read back."""


class StoreDurabilityError(StoreError):
    """Rows could be written neither to the database nor to the spill file.

    They are still held in memory and retried; the caller must not acknowledge them as recorded.
    """


class StoreBackpressureError(StoreError):
    """The bounded write queue stayed full for longer than the configured put timeout."""


class SpillCorruptError(StoreError):
    """A spill file line other than a torn final line could not be decoded."""
