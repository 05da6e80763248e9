#!/usr/bin/env bash
# Run V, device call 3, on V2 (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - rope_qk ours at LTX_ROPE_FLAT_THREADS 128 (default), 256 and 64, two rounds alternating,
#     bf16 (call 2: 0.91x compile at 1024 tokens, 0.87x at 16)
#   - the knob tests rope-flat-rows64 (cut by call 2's end) and rms-dense-wide-blocks (cut by
#     run U's call 2)
# At most 8 files come back from $OUT: $OUT/v3.log (summary), $OUT/v3.tar.gz (sweeps),
# $OUT/tests-knobs*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start v3
use_prebuilt V2 | tee -a "$LOG"
log "rope_qk under the flat path's block size (V2)"
AB_DTYPES=bf16 AB_SWEEP_LIMIT=30 knob_ab rope_qk "$W/threads" "t128=" \
  "t256=LTX_ROPE_FLAT_THREADS=256" "t64=LTX_ROPE_FLAT_THREADS=64" | tee -a "$LOG"
tar -C $W -czf "$OUT/v3.tar.gz" .
log "knob tests: rope-flat-rows64, then rms-dense-wide-blocks"
run_tests tests-knobs-rope 110 -k "rope-flat-rows64" tests/test_stage_knobs.py
run_tests tests-knobs-rms 170 -k "rms-dense-wide-blocks" tests/test_stage_knobs.py
log done
