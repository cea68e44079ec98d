"""The experiments a record store knows were started: in its database, in its spill file, or by this
process. A record naming any other experiment is refused (UnknownExperimentError), so a misspelt id
fails at the call instead of leaving orphan rows."""
from __future__ import annotations

from collections.abc import Iterable

from agentchemist.record import validate as v
from agentchemist.record.errors import StoreError
from agentchemist.record.sql_backend import SqlBackend

__all__ = ["KnownExperiments"]


class KnownExperiments:
    def __init__(self, backend: SqlBackend, ids: Iterable[str]) -> None:
        self._backend = backend
        self._ids = set(ids)

    def __contains__(self, experiment_id: str) -> bool:
        return experiment_id in self._ids

    def add(self, experiment_id: str) -> None:
        self._ids.add(experiment_id)

    def check(self, experiment_id: str) -> str:
        """``experiment_id``, once it is a valid name of a started experiment (else RecordInputError or
        UnknownExperimentError)."""
        v.name("experiment_id", experiment_id)
        if experiment_id not in self._ids:
            try:  # another process may have started it on a shared PostgreSQL
                self._ids |= self._backend.experiment_ids()
            except StoreError:
                pass
        if experiment_id not in self._ids:
            raise v.UnknownExperimentError(
                f"experiment {experiment_id!r} was not started; call start_experiment first"
            )
        return experiment_id
