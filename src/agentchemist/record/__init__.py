"""The high-confidence recorder's core: confidence-gated fusion and durable storage (no ROS here).

- :func:`fuse` fuses one quantity's channel estimates through the paper's three confidence gates.
- :class:`SingleSourceFilter` rejects outliers, smooths and scores single-sensor quantities (pH, T).
- :class:`StampOrder` flags out-of-order stamps per stream before they reach fusion.
- :class:`DropJoiner` builds the per-drop titration table (drop volume + settled pH).
- :func:`open_store` opens a :class:`RecordStore` on SQLite (WAL) or PostgreSQL; batched, durable on
  ``flush()``, spilling to a local file while the database is unavailable.
- :func:`export_run` writes a run to CSV/Parquet; :func:`read_export` reads it back.
"""

from agentchemist.record.drop_join import DropJoinConfig, DropJoiner, JoinedDrop
from agentchemist.record.errors import (
    RecordConfigError,
    RecordInputError,
    SpillCorruptError,
    StoreBackpressureError,
    StoreClosedError,
    StoreDurabilityError,
    StoreError,
    StoreDamagedError,
    StoreUnavailableError,
    UnknownExperimentError,
)
from agentchemist.record.fusion import ChannelEstimate, Failure, FusionConfig, FusionResult, fuse
from agentchemist.record.ordering import StampOrder
from agentchemist.record.single_source import (
    PH_FILTER,
    TEMPERATURE_FILTER,
    FilteredReading,
    SingleSourceConfig,
    SingleSourceFilter,
)
from agentchemist.record.store import QueuedStore, RecordStore, default_spill_path, open_store, run_database_path



def __getattr__(name: str):  # export pulls in pyarrow (~0.4 s): load it only when asked for
    if name in ("export_run", "read_export"):
        from agentchemist.record import export

        return getattr(export, name)
    raise AttributeError(f"module 'agentchemist.record' has no attribute {name!r}")


__all__ = [
    "ChannelEstimate",
    "DropJoinConfig",
    "DropJoiner",
    "Failure",
    "FilteredReading",
    "FusionConfig",
    "FusionResult",
    "JoinedDrop",
    "PH_FILTER",
    "QueuedStore",
    "RecordConfigError",
    "RecordInputError",
    "RecordStore",
    "SingleSourceConfig",
    "SingleSourceFilter",
    "SpillCorruptError",
    "StampOrder",
    "StoreBackpressureError",
    "StoreClosedError",
    "StoreDurabilityError",
    "StoreError",
    "StoreDamagedError",
    "StoreUnavailableError",
    "TEMPERATURE_FILTER",
    "UnknownExperimentError",
    "default_spill_path",
    "export_run",
    "fuse",
    "open_store",
    "read_export",
    "run_database_path",
]
