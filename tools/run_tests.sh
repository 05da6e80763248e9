#!/usr/bin/env bash
# The test command: install what is missing, build, run the conformance checks (including the
# CUDA compile check for sm_75/80/90), then the test suite on every backend present.
#   bash tools/run_tests.sh            # everything
#   bash tools/run_tests.sh -m kernels_ci   # extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
bash tools/install_deps.sh
backends=$($PY -c "import torch; print('cuda,cpu' if torch.version.cuda else 'cpu')")
$PY tools/build.py --backends "$backends"
$PY tools/check.py
$PY -m pytest -q -p no:cacheprovider "$@"
