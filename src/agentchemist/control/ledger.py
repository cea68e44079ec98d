"""What the dispenser has counted: the titrant volume an experiment's goals have dispensed together.

Each drops goal counts its own Q_stat from zero (agentchemist.control.drop_ledger); the experiment's volume,
published on the statistical channel, is that count on top of what its earlier goals dispensed (a goal after
a hold or a cancel). A new experiment counts from zero.
"""
from __future__ import annotations


class ExperimentVolume:
    """The cumulative titrant volume last published, for one experiment at a time."""

    def __init__(self):
        self.experiment_id = ""
        self.total_ml = 0.0

    def offset_for(self, experiment_id: str) -> float:
        """What a new goal of `experiment_id` counts on from."""
        return self.total_ml if experiment_id == self.experiment_id else 0.0

    def record(self, experiment_id: str, value_ml: float) -> None:
        self.experiment_id, self.total_ml = experiment_id, value_ml
