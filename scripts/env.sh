# Source this file (". scripts/env.sh") for the environment the Makefile uses: the venv, the ROS 2
# wheels' prefix and the colcon install prefix of ros2_ws. It is the `source install/setup.bash`
# equivalent that also works where ROS 2 comes from PyPI wheels.
_ac_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
_ac_venv="${AGENTCHEMIST_VENV:-$_ac_root/.venv}"
_ac_install="$_ac_root/ros2_ws/install"
_ac_pyver="$("$_ac_venv/bin/python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])' 2>/dev/null || echo python3.11)"

export VIRTUAL_ENV="$_ac_venv"
case ":$PATH:" in *":$_ac_venv/bin:"*) ;; *) export PATH="$_ac_venv/bin:$PATH" ;; esac
if [ -z "${ROS_DISTRO:-}" ]; then
  # Wheels: the venv is the ROS prefix.
  export AMENT_PREFIX_PATH="$_ac_install:$_ac_venv"
  export CMAKE_PREFIX_PATH="$_ac_install:$_ac_venv"
else
  export AMENT_PREFIX_PATH="$_ac_install${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
fi
export PYTHONPATH="$_ac_install/lib/$_ac_pyver/site-packages${PYTHONPATH:+:$PYTHONPATH}"
export LD_LIBRARY_PATH="$_ac_install/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# Keep DDS traffic on this machine unless the user says otherwise (robots set their own).
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
export MPLBACKEND="${MPLBACKEND:-Agg}"
export AGENTCHEMIST_ROOT="$_ac_root"
unset _ac_root _ac_venv _ac_install _ac_pyver
