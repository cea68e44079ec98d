"""The typed vocabulary between agents, free of ROS: symbols, notes, the dispense request, anomaly kinds.

Nodes translate these to and from messages in one codec layer (``agentchemist_ros.common.codec``); the
core reads and builds these types only.
"""
from agentchemist.contracts.anomalies import AnomalyKind, Severity, anomaly_kind
from agentchemist.contracts.notes import NOTES, Note, note_from
from agentchemist.contracts.symbols import INPUT_SYMBOLS, NOTE_SYMBOLS, Symbol, symbol

__all__ = ["INPUT_SYMBOLS", "NOTES", "NOTE_SYMBOLS", "AnomalyKind", "Note", "Severity", "Symbol", "anomaly_kind",
           "note_from", "symbol"]
