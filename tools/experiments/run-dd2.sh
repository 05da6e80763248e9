#!/usr/bin/env bash
# Run DD, device call 2, on Y0 (HEAD's CUDA source; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h):
#   1. issue 4's full table in fp16, 3 rounds in shuffled order, --monitor (call 1 did bf16);
#   2. while the call has time: LTX 2B at issue 5's setting, torch.compile alone and kernels +
#      compile, one process each, cuBLASLt's workspace at 0 as in run AA (no profile: the
#      times only, beside each other on this lease).
# Files: $OUT/dd2.log, $OUT/dd2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start dd2
use_prebuilt Y0 | tee -a "$LOG"

full_table fp16 390  # (as run, the table was packed as $OUT/sweeps.tar.gz)

# As run in call 2 this loop spelled the command out and asked for compile alone with
# "--no-optimized-kernels", which is not a flag (rc 2): compile did not run there, kernels +
# compile did. ltx_time (gpu_prebuilt.sh) has the right flags; run-dd3.sh used it.
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul --cublaslt-workspace-kib 0"
for cfg in compile kernels+compile; do
  fits 75 || break
  ltx_time "$cfg" $(( ${CALL_BUDGET:-560} - ($(date +%s) - CALL_T0) - 5 ))
done
experiment_end
