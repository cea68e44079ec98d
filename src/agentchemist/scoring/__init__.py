"""Scoring of scenario runs (the paper's Table 4 metrics and ours), independent of how the runs were made."""
from agentchemist.scoring.run_score import RunRecord, reason_matches, score_run
from agentchemist.scoring.runs import experiment_seconds, load_run
from agentchemist.scoring.summary import PAPER_TABLE4, summarise

__all__ = ["PAPER_TABLE4", "RunRecord", "experiment_seconds", "load_run", "reason_matches", "score_run", "summarise"]
