#!/usr/bin/env bash
# Run AA, device call 3, on Y0 (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): with cuBLASLt
# given no workspace for every configuration (--cublaslt-workspace-kib 0), LTX 2B at issue 5's
# setting once more (every configuration in one process: a second sample on this lease of
# call 2's 39.83 ms one by one / 40.14 over the loop for kernels + compile), then LTX 13B in the
# same setting, every configuration. Files: $OUT/aa3.log, $OUT/aa3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start aa3
use_prebuilt Y0 | tee -a "$LOG"
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul --cublaslt-workspace-kib 0"
export LTX_E2E_KERNELS="memsets"
ltx_e2e ltx-ws0-all 240 --all-configs
fits 250 && ltx_e2e ltx13b-ws0-all 280 --all-configs --model-size 13b --profile-loop 0
experiment_end
