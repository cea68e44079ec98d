"""Every anomaly kind the code reports and every kind docs/anomalies.md documents is an AnomalyKind member."""
import re
from pathlib import Path

import pytest

from agentchemist.contracts.anomalies import AnomalyKind, Severity, anomaly_kind

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "src" / "agentchemist"
NODES = ROOT / "ros2_ws" / "src" / "agentchemist_ros" / "agentchemist_ros"
PIPER_DRIVER = CORE / "hardware" / "piper" / "driver.py"
#: the piper driver's events that are logged only, never published (docs/anomalies.md, piper_driver)
PIPER_LOGGED_ONLY = {"holding", "tracking", "gripper_uncommanded"}

# Where a kind is written as a literal: the first argument of the typed reports (Report, Abort, Notice,
# LinkEvent, ControllerAnomaly after its stamp), of a node's or a frame watch's report call, the kind after
# an abort's reason, and the `kind=` of an Anomaly built in a node.
_CALLS = [
    re.compile(r'\b(?:Report|Abort|Notice|LinkEvent)\(\s*"([a-z_]+)"'),
    re.compile(r'\bControllerAnomaly\(\s*(?:now|stamp),\s*"([a-z_]+)"'),
    re.compile(r'\.(?:_?report|anomaly|issue|store_failure)\(\s*"([a-z_]+)"'),
    re.compile(r'(?:\b|_)abort\((?:[^()]|\([^()]*\))*?,\s*"([a-z_]+)"\s*[,)]'),
]
_NODE_KIND = re.compile(r'\bkind="([a-z_]+)"')
_DICT_KIND = re.compile(r'"kind": "([a-z_]+)"')
_PIPER = re.compile(r'_raise\(\s*"([a-z_]+)"')


def kinds_in_source(text: str, *, node: bool = False, fsm: bool = False) -> set[str]:
    found = {m.group(1) for pattern in _CALLS for m in pattern.finditer(text)}
    if node:  # in the core `kind=` also names audio events and fits; in a node it is an Anomaly's
        found |= set(_NODE_KIND.findall(text))
    if fsm:  # an abort decided in the supervision's detail dict
        found |= set(_DICT_KIND.findall(text))
    return found


def kinds_in_docs(text: str) -> set[str]:
    """The backticked names in the first column of every table whose first header is `kind`, and in the
    `expected kind` column of the twin-fault table."""
    found, column = set(), None
    for line in text.splitlines():
        if not line.startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = 0 if cells[0] == "kind" else cells.index("expected kind") if "expected kind" in cells else -1
            continue
        if column >= 0 and not set(cells[0]) <= {"-", " "}:
            found |= set(re.findall(r"`([a-z_]+)`", cells[column]))
    return found


def code_kinds() -> dict[str, set[str]]:
    where: dict[str, set[str]] = {}
    for path in [*CORE.rglob("*.py"), *NODES.rglob("*.py")]:
        if path.is_relative_to(CORE / "contracts"):
            continue
        text = path.read_text()
        kinds = kinds_in_source(text, node=path.is_relative_to(NODES), fsm=path.is_relative_to(CORE / "fsm"))
        if path == PIPER_DRIVER:
            kinds = {"piper_" + k for k in _PIPER.findall(text) if k not in PIPER_LOGGED_ONLY}
        for kind in kinds:
            where.setdefault(kind, set()).add(str(path.relative_to(ROOT)))
    return where


def unknown(kinds) -> set[str]:
    return {k for k in kinds if k not in set(AnomalyKind)}


def test_every_kind_the_code_reports_is_a_member():
    where = code_kinds()
    assert len(where) > 40  # the scan still finds the code's kinds
    assert {k: sorted(where[k]) for k in unknown(where)} == {}


def test_every_documented_kind_is_a_member():
    documented = kinds_in_docs((ROOT / "docs" / "anomalies.md").read_text())
    assert {"invalid_plan", "no_drop", "audio_noise", "piper_feedback_timeout", "reading_flagged"} <= documented
    assert unknown(documented) == set()


def test_an_unknown_kind_is_found():
    source = ('out.append(Report("ph_stuk", "warn", "frozen"))\n'
              'self.abort(f"gone ({x})", "recorder_gone", now)\n'
              'ControllerAnomaly(\n    now, "no_dorp", "x")\n'
              'self.report("audio_nose", "warn", "d")\n')
    assert unknown(kinds_in_source(source)) == {"ph_stuk", "recorder_gone", "no_dorp", "audio_nose"}
    assert unknown(kinds_in_source('make_anomaly(kind="node_eror")', node=True)) == {"node_eror"}
    docs = "| kind | severity |\n| --- | --- |\n| `state_timeout`, `stale_timeout` | halt |\n\nprose `x_y`\n"
    assert unknown(kinds_in_docs(docs)) == {"stale_timeout"}
    twin = "| twin fault | scenario | expected kind |\n| --- | --- | --- |\n| `ph_dropout` | f.yaml | `sensor_timout` |\n"
    assert unknown(kinds_in_docs(twin)) == {"sensor_timout"}


def test_members_equal_their_strings():
    assert AnomalyKind.NO_DROP == "no_drop" and Severity.HALT == "halt"
    assert anomaly_kind("audio_noise") is AnomalyKind.AUDIO_NOISE
    with pytest.raises(ValueError, match="unknown anomaly kind 'audio_nois'"):
        anomaly_kind("audio_nois")
