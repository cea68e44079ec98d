"""The typed vocabulary between agents, free of ROS: symbols, notes, the dispense request, anomaly kinds.

Nodes translate these to and from messages in one codec layer (``agentchemist_ros.common.codec``); the
core reads and builds these types only.
"""
from agentchemist.contracts.symbols import INPUT_SYMBOLS, NOTE_SYMBOLS, Symbol, symbol

__all__ = ["INPUT_SYMBOLS", "NOTE_SYMBOLS", "Symbol", "symbol"]
