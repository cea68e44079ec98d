"""Every shell command in the user's documents (README.md, the cheat sheet, the tutorials, the how-to on
watching a run) runs as written, or is listed here with why it cannot run in a test (it needs a robot, a
display, minutes of graph time, or the output of a command before it). A new command in those documents
that is in neither list fails this test, so it gets classified (issue 22, item 8; issue 40)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
#: the documents a newcomer follows; their commands are held to the same rule as the README's
USER_DOCS = [README, REPO / "docs" / "cheatsheet.md", *sorted((REPO / "docs" / "tutorials").glob("*.md")),
             REPO / "docs" / "howto" / "watch_a_run.md"]

# (pattern of a command line, why a unit test does not run it)
NOT_HERE = [
    (r"^make (demo|test|setup|bench|shell)\b", "minutes of setup or graph time, or an interactive shell: the lead's "
                                              "full runs cover it"),
    (r"^source /opt/ros/", "a system ROS 2 installation (the test machines use PyPI wheels)"),
    (r"^source ros2_ws/install/setup\.bash", "follows `source /opt/ros/...` on a robot"),
    (r"^ros2 launch ", "ros2 launch is not installed on the test machines (launch files are checked structurally)"),
    (r"^agentchemist run\b", "the whole graph for minutes (the graph tests run it)"),
    (r"^agentchemist console\b", "serves the page until stopped (tests/unit/test_console_*.py; the browser drives it "
                                 "in tests/e2e/test_console_browser.py)"),
    (r"^ros2 action send_goal ", "the ros2 CLI is not installed on the test machines (the console and the graph "
                                "tests send the same goal)"),
    (r"^agentchemist (export|analyze) ", "needs a stored run or a measured curve file (tests/unit/test_analyze_cli.py, "
                                        "tests/unit/test_report_newcomer.py)"),
    (r"^agentchemist scenario run\b", "the whole graph for minutes per run (tests/graph/test_scenario_runner.py)"),
    (r"^python bench/mujoco_library\.py\b", "the whole graph with MuJoCo for tens of minutes (a benchmark; "
                                           "tests/unit/test_arm_backends.py covers the backend)"),
    (r"^agentchemist report \S*<experiment_id>", "needs a stored run (tests/unit/test_report_newcomer.py)"),
    (r"^agentchemist bag (record|info|play)\b", "needs a running graph or the bag it records (tests/graph, tests/replay)"),
    (r"^agentchemist ph-calibrate ", "writes the user's electrode store (tests/unit/test_electrode_calibration.py "
                                     "and the pty procedure in tests/unit/test_serial_instruments.py run its code)"),
    (r"^agentchemist doctor\b", "listens to a graph and exits 1 without a robot (tests/graph/test_doctor.py runs it)"),
    (r"^ros2 run |^-p \"cameras:=", "a node in its own process with MuJoCo rendering (continued on the next line)"),
    (r"^agentchemist policy (record|train)\b", "minutes of twin recording and CPU training (tests/unit/test_policy_vla_"
                                               "train.py and test_policy_vla_dataset.py run them small)"),
]
# Commands run here, as written (in the test's environment: scripts/env.sh is already in effect).
RUN_HERE = [r"^\. scripts/env\.sh$", r"^agentchemist plan ", r"^agentchemist calibrate --twin$", r"^agentchemist --help$",
            r"^agentchemist --version$"]


def readme_commands() -> list[str]:
    out = []
    for block in (b for doc in USER_DOCS for b in re.findall(r"```bash\n(.*?)```", doc.read_text(), re.S)):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()  # a trailing comment is explanation, not the command
            if line and not line.startswith("#"):
                out.append(line)
    return out


def test_every_readme_command_is_classified():
    commands = readme_commands()
    assert any(c.startswith("agentchemist plan") for c in commands)
    assert any(c.startswith("agentchemist run \"") for c in commands), "the README shows your own instruction"
    unknown = [c for c in commands if not any(re.search(p, c) for p, _ in NOT_HERE)
               and not any(re.search(p, c) for p in RUN_HERE)]
    assert not unknown, f"documented commands neither run here nor listed with a reason: {unknown}"
    assert not [c for c in commands if " | --" in c], "a command with a literal '| --' cannot run as written"


@pytest.mark.parametrize("command", [c for c in readme_commands() if any(re.search(p, c) for p in RUN_HERE)
                                     and not c.startswith(". ")])
def test_readme_command_runs_as_written(command, tmp_path):
    shipped = REPO / "config" / "calibration" / "pipette.yaml"
    before = shipped.read_bytes()
    env = dict(os.environ, AGENTCHEMIST_CALIBRATION_DIR=str(tmp_path / "calibration"))
    argv = shlex.split(command)
    assert argv[0] == "agentchemist"
    proc = subprocess.run([sys.executable, "-m", "agentchemist.cli", *argv[1:]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    # No side effects on the clone: the shipped calibration is never rewritten; a calibration goes to the store.
    assert shipped.read_bytes() == before
    if argv[1] == "calibrate":
        assert (tmp_path / "calibration" / "pipette.yaml").is_file()
        assert str(tmp_path / "calibration" / "pipette.yaml") in proc.stdout


def test_readme_is_a_users_document():
    """Issue 40: about 150-250 lines, no commit hashes or dated measurements (those are in the CHANGELOG and
    the lab notes), and every local link resolves."""
    text = README.read_text()
    assert len(text.splitlines()) < 250
    assert not re.search(r"\b[0-9a-f]{7}\b", text), "a commit hash in the README"
    for doc in [README, *USER_DOCS, REPO / "docs" / "index.md", REPO / "docs" / "reference" / "cli.md"]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.relative_to(REPO)} links to missing {target}"


def test_readme_benchmarks_are_the_measured_ones():
    """The README's goal/now table quotes docs/benchmarks.md, which `make bench` writes from bench/results:
    a figure that is not (or no longer) there fails here, so the README never keeps a stale number."""
    text = README.read_text()
    section = text[text.index("## Benchmarks"):text.index("## Where to go next")]
    rows = [r.split("|")[1:-1] for r in section.splitlines() if r.startswith("| [")]
    assert len(rows) >= 4
    measured = (REPO / "docs" / "benchmarks.md").read_text()
    for _name, _goal, now in rows:
        assert now.strip() in measured, f"README benchmark figure not in docs/benchmarks.md: {now.strip()}"
