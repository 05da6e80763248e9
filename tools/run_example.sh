#!/usr/bin/env bash
# The main job: install what is missing, build the variant(s) this machine needs, then run
# example.py on the best device present (CUDA when there is a GPU, else the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
bash tools/install_deps.sh
backends=$($PY -c "import torch; print('cuda,cpu' if torch.version.cuda else 'cpu')")
$PY tools/build.py --backends "$backends"
$PY example.py "$@"
