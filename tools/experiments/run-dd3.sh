#!/usr/bin/env bash
# Run DD, device call 3, on Y0 (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): what call 2's
# LTX step meant to do and could not (its compile run named a flag benchmark_example.py does
# not have, --no-optimized-kernels; kernels + compile alone ran): LTX 2B at issue 5's setting,
# torch.compile alone and kernels + compile, one process each, in the order compile, kernels +
# compile, compile, kernels + compile, cuBLASLt's workspace at 0 as in run AA.
# Files: $OUT/dd3.log, $OUT/dd3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
CALL_BUDGET=${CALL_BUDGET:-420}
experiment_start dd3
use_prebuilt Y0 | tee -a "$LOG"
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul --cublaslt-workspace-kib 0"
for LTX_TAG in 1 2; do
  for cfg in compile kernels+compile; do
    fits 90 || break 2
    ltx_time "$cfg" 110
  done
done
experiment_end
