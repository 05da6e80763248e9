#!/usr/bin/env bash
# Run Q, device call 2, on R (afe3b8e: the dense path's defaults from call 1) (carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the CUDA tests of adaln, whole (call 1's were cut at 150 s, 2016 of 2037 passed)
#   - the knob tests of the dense path (every grid at any size; one-row blocks)
#   - compute-sanitizer memcheck and racecheck of the adaln family at the defaults (the dense
#     path where it runs now) and with it forced at every grid at any size (call 1's racecheck
#     was cut by the call's limit)
# Files: $OUT/q2.log (summary), $OUT/tests*.log, $OUT/sanitize-*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start q2
use_prebuilt R | tee -a "$LOG"
log "tests R (CUDA): adaln"
run_tests tests 250 -n 16 -k cuda tests/test_adaln.py
log "knob tests: the dense path at every grid, in one-row blocks"
run_tests tests-knobs 170 -k dense tests/test_stage_knobs.py
sanitize defaults 45 adaln
LTX_ADALN_DENSE=1 LTX_GATED_DENSE=1 LTX_ADALN_DENSE_MAX_MB=0 sanitize dense 45 adaln
log done
