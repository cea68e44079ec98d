#!/usr/bin/env bash
# The image's pip requirement lists, derived from requirements/ inside the image build (after apt):
#   bash docker/venv_requirements.sh <requirements dir> <output dir>
# writes
#   torch.txt        the torch pin without its local label (from the build's TORCH_INDEX: CPU or CUDA)
#   core.txt         requirements/core.txt without torch and opencv-python-headless
#   constraints.txt  requirements/constraints.txt without numpy, OpenCV and torch, plus numpy pinned to the
#                    version apt installed: pip then finds numpy satisfied by the system site-packages and
#                    never puts a second numpy in the venv, in front of the one the ROS packages use.
# The test tools (requirements/test.txt) are not installed in the images.
set -euo pipefail
src="$1"
out="$2"
mkdir -p "$out"
# without a local label (+cpu, +cu128): the index the build names decides the variant
grep -E '^torch==' "$src/constraints.txt" | sed -E 's/\+[A-Za-z0-9.]+$//' > "$out/torch.txt" \
  || { echo "venv_requirements: no torch pin in $src/constraints.txt" >&2; exit 1; }
numpy_version=$(python3 -c 'import numpy; print(numpy.__version__)') \
  || { echo "venv_requirements: apt's python3-numpy is not importable" >&2; exit 1; }
grep -v -E '^(torch|opencv-python-headless)([=<> ]|$)' "$src/core.txt" > "$out/core.txt"
grep -v -E '^(numpy|opencv-python-headless|torch)==' "$src/constraints.txt" > "$out/constraints.txt"
echo "numpy==${numpy_version}" >> "$out/constraints.txt"
echo "venv_requirements: numpy ${numpy_version} from apt; $(cat "$out/torch.txt") from the torch index"
