"""One parser for every verb (issue 40): help everywhere, --version, the usage line names every verb, one
exit-code table, no traceback on a user's error, and the ROS-side verbs say the environment is missing
(exit 4) instead of failing deep inside."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentchemist import __version__, exit_codes
from agentchemist.cli import PASS_THROUGH, build_parser
from tests.conftest import REPO

VERBS = ("plan", "run", "console", "report", "export", "calibrate", "ph-calibrate", "bag", "scenario", "policy",
         "doctor", "analyze")


def cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "agentchemist.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def test_version_and_the_usage_line_name_every_verb():
    proc = cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"agentchemist {__version__}"
    help_text = cli("--help").stdout
    for verb in VERBS:
        assert f"    {verb}" in help_text, verb
    for code, _meaning in exit_codes.TABLE:  # the one exit-code table, in the help
        assert f"  {code:>3}  " in help_text


@pytest.mark.parametrize("verb", [v for v in VERBS if v not in PASS_THROUGH])
def test_every_own_verb_has_help(verb):
    proc = cli(verb, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: agentchemist " + verb), proc.stderr


def test_scenario_help_exits_0_and_a_wrong_scenario_verb_is_a_usage_error():
    proc = cli("scenario", "--help")
    assert proc.returncode == 0 and "scenario run FILE" in proc.stdout
    proc = cli("scenario", "play")
    assert proc.returncode == exit_codes.USAGE and "usage:" in proc.stderr and "Traceback" not in proc.stderr


def test_user_errors_are_one_line_with_the_table_s_code():
    for args, code in ((("plan", "x", "--bogus"), exit_codes.USAGE), (("report", "/nonexistent/run"), exit_codes.USAGE),
                       (("plan", "x", "--scene", "/nonexistent.json"), exit_codes.USAGE),
                       (("calibrate",), exit_codes.USAGE), (("frobnicate",), exit_codes.USAGE)):
        proc = cli(*args)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout, args


def test_ros_verbs_without_the_ros_environment_exit_4():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AMENT_PREFIX_PATH")}
    env["PYTHONPATH"] = str(REPO / "src")  # the core only: agentchemist_ros is not importable
    for verb in ("run", "console", "bag", "scenario"):
        args = (verb, "run", "x.yaml") if verb == "scenario" else (verb,)
        proc = cli(*args, env=env)
        assert proc.returncode == exit_codes.NO_ENVIRONMENT, (verb, proc.stderr)
        assert "ROS 2 environment is not set up" in proc.stderr and "Traceback" not in proc.stderr


def test_pass_through_verbs_get_everything_after_the_verb_as_typed():
    assert set(PASS_THROUGH) == {"bag", "scenario", "policy", "doctor", "console"}
    proc = cli("policy", "train", "--help")  # the policy's own parser answers, options and all
    assert proc.returncode == 0 and proc.stdout.startswith("usage: agentchemist policy train")
    proc = cli("policy", "train", "--dataset", "/nonexistent", "--out", "/tmp/x", "--steps", "1")
    assert proc.returncode == exit_codes.USAGE and "/nonexistent" in proc.stderr and "Traceback" not in proc.stderr
