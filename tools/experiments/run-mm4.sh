#!/usr/bin/env bash
# Run MM, a short device call for the time left after starts that found no machine (run-mm1.sh
# to run-mm3.sh never ran; PERFORMANCE.md, run MM), CALL_BUDGET=450 by default here; with
# CALL_BUDGET=200, step 1 alone. Carry as run-mm1.sh. In order:
#   1. compute-sanitizer memcheck and racecheck of every op family (tools/sanitize_ops.py) on
#      MM0, the current CUDA source: the erf GELU's activation code of 216d5fc has not been
#      through either;
#   2. on an H200: LTX 2B at issue 5's setting, every configuration in one process (run-mm1.sh's
#      step 1); on another card (run LL has those numbers on the H100): issue 4's full bf16
#      table of the current source (run-mm2.sh's step 1), as far as the call's time allows.
# Files: $OUT/mm4.log, $OUT/mm4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export CALL_BUDGET=${CALL_BUDGET:-450}
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start mm4
use_prebuilt MM0 | tee -a "$LOG"

sanitize all 55
if on_h200; then
  export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS LTX_E2E_KERNELS=$LTX_ISSUE5_KERNELS
  fits 290 && ltx_e2e ltx-all 290 --all-configs
else
  fits 120 && full_table bf16 "$(time_left)"
fi
experiment_end
