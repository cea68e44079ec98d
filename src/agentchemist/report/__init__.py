"""Summarizer report: the recorder's data -> Markdown, JSON and HTML report with charts.

    from agentchemist.report import RunData, write_report
    paths = write_report(RunData(experiment={...}, fused_records=[...]), Path("runs/exp/report"))

See :mod:`.model` for the input, :mod:`.summary` for the eleven sections, :mod:`.writer` for files.
"""

from .model import DropRow, ReportInputError, RunData, titration_points, titration_table
from .summary import SCHEMA_VERSION, SECTION_TITLES
from .writer import ReportPaths, write_report

__all__ = [
    "SCHEMA_VERSION",
    "SECTION_TITLES",
    "DropRow",
    "ReportInputError",
    "ReportPaths",
    "RunData",
    "titration_points",
    "titration_table",
    "write_report",
]
