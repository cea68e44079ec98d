"""Run at the end of an image build: the nodes' python3 must import numpy and OpenCV from apt (the
versions the ROS packages were built against), the venv's packages (torch, the agentchemist core)
through PYTHONPATH, and rclpy with our messages. Exits non-zero, naming the problem, otherwise."""
import importlib
import sys

APT = "/usr/lib/python3/dist-packages/"


def main() -> int:
    problems = []
    for name in ("numpy", "cv2"):
        module = importlib.import_module(name)
        if not module.__file__.startswith(APT):
            problems.append(f"{name} comes from {module.__file__}, not apt's {APT} (a venv copy shadows it)")
    import agentchemist  # noqa: F401  (the core, from the venv)
    import rclpy  # noqa: F401
    import torch
    from agentchemist_interfaces.msg import Anomaly  # noqa: F401
    from diagnostic_msgs.msg import DiagnosticArray  # noqa: F401
    print(f"numpy {importlib.import_module('numpy').__version__} (apt), torch {torch.__version__} "
          f"(CUDA {torch.version.cuda or 'none'})")
    for p in problems:
        print(f"check_python_env: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
