"""A protocol that names a symbol outside the vocabulary (agentchemist.contracts.Symbol) is refused when
the library loads, with the place and the closest known symbol; the shipped protocols load."""
import shutil

import pytest

from agentchemist.contracts import INPUT_SYMBOLS
from agentchemist.fsm.agents import AGENT_EVENT_SYMBOLS, PASSIVE_SYMBOLS
from agentchemist.fsm.validation import unknown_symbols
from agentchemist.plan.protocols import ProtocolError, ProtocolLibrary, default_protocols_dir


def _library_with(tmp_path, old: str, new: str, count: int = 1):
    for path in default_protocols_dir().glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    target = tmp_path / "acid_base_titration.yaml"
    text = target.read_text()
    assert text.count(old) >= count
    target.write_text(text.replace(old, new, count))
    return ProtocolLibrary.load(tmp_path)


def test_shipped_protocols_use_only_known_symbols():
    library = ProtocolLibrary.load()
    assert len(library.protocols) >= 3
    for protocol in library.protocols.values():
        assert unknown_symbols(protocol.state_machine, protocol.subtasks) == []


def test_a_misspelt_input_symbol_fails_at_load(tmp_path):
    with pytest.raises(ProtocolError) as err:
        _library_with(tmp_path, "input_symbols: [act, grasp_ok, draw_ok, titrate, drop, ph_stable,",
                      "input_symbols: [act, grasp_ok, draw_ok, titrate, drop, ph_stabel,")
    assert "acid_base_titration.yaml" in str(err.value)
    assert "input_symbols names 'ph_stabel', which is not an input symbol (did you mean 'ph_stable'?)" in str(err.value)


def test_a_misspelt_transition_symbol_fails_at_load(tmp_path):
    with pytest.raises(ProtocolError, match=r"transition initial -> pipette_grasped names 'grasp_okk'"):
        _library_with(tmp_path, "{source: initial, symbol: grasp_ok,", "{source: initial, symbol: grasp_okk,")


def test_a_misspelt_subtask_symbol_fails_at_load(tmp_path):
    with pytest.raises(ProtocolError, match=r"subtask '\w+' names 'drawok'"):
        _library_with(tmp_path, "expected_transition: {symbol: draw_ok,", "expected_transition: {symbol: drawok,")


def test_a_note_is_not_an_input_symbol():
    reasons = unknown_symbols({"input_symbols": ["hold"], "transitions": []})
    assert reasons and "'hold'" in reasons[0]


def test_the_producers_table_speaks_the_vocabulary():
    produced = set().union(*AGENT_EVENT_SYMBOLS.values()) | PASSIVE_SYMBOLS
    assert produced <= INPUT_SYMBOLS
