"""Reading a record store: the database's rows merged with the rows still waiting in the spill file.

Reads take the spill first, then the database: a replay in between shows up in the database and is
de-duplicated by uid; the other order could miss rows moving from spill to database. An unreadable
database raises StoreUnavailableError: a partial answer would look complete."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentchemist.record import schema
from agentchemist.record import validate as v
from agentchemist.record.spill import SpillFile, merge_experiments, merge_records
from agentchemist.record.sql_backend import SqlBackend

__all__ = ["StoreReads"]


class StoreReads:
    def __init__(self, backend: SqlBackend, spill: SpillFile) -> None:
        self._backend, self._spill = backend, spill

    def run(self, experiment_id: str) -> dict[str, Any]:
        """Everything recorded for one experiment (see QueuedStore.load_run for the shape)."""
        experiments = self._merged_experiments(experiment_id)
        if not experiments:
            raise v.UnknownExperimentError(f"no experiment {experiment_id!r} in this store")
        run: dict[str, Any] = {"experiment": _with_metadata(experiments[0])}
        for key, table in schema.RUN_KEYS.items():
            rows = self._merged_records(table, experiment_id)
            run[key] = [{k: r[k] for k in schema.RECORD_TABLES[table].names} for r in rows]
        return run

    def fused(self, experiment_id: str, *, quantity: str | None, since: float | None, until: float | None,
              limit: int) -> list[dict[str, Any]]:
        """Fused records with since <= stamp <= until, oldest first, at most ``limit`` (0 = all), with ``seq``."""
        rows = self._merged_records("fused_records", experiment_id, quantity=quantity, since=since, until=until)
        if limit:
            rows = rows[:limit]
        names = (*schema.RECORD_TABLES["fused_records"].names, "seq")
        return [{k: r[k] for k in names} for r in rows]

    def experiments(self) -> list[dict[str, Any]]:
        return [_with_metadata(e) for e in self._merged_experiments(None)]

    def _spilled(self) -> list[dict[str, Any]]:
        return self._spill.read() if self._spill.exists() else []

    def _merged_experiments(self, experiment_id: str | None) -> list[dict[str, Any]]:
        spilled = self._spilled()
        rows = {e["experiment_id"]: e for e in self._backend.read_experiments(experiment_id)}
        return merge_experiments(rows, spilled, experiment_id)

    def _merged_records(self, table: str, experiment_id: str, **filters: Any) -> list[dict[str, Any]]:
        spilled = self._spilled()
        rows = self._backend.read_records(table, experiment_id, **filters)
        return merge_records(rows, spilled, table, experiment_id, **filters)


def _with_metadata(experiment: Mapping[str, Any]) -> dict[str, Any]:
    """The experiment's row with its metadata keys also at top level, where they do not collide."""
    out = dict(experiment)
    for key, value in experiment.get("metadata", {}).items():
        out.setdefault(key, value)
    return out
