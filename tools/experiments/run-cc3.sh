#!/usr/bin/env bash
# Run CC, device call 3, on B3 (B2 with the two-pass kernel's reduction through block_rows_sum;
# carry [".whl-h", ".prebuilt"], WHEELS=.whl-h). Call 2 had the two-pass path at 1.84x the
# register path's time at 1x16384x8192 (248.0 against 134.6 us): Nsight Compute showed it
# issue-bound (70% of the issue slots, 2.3x the register path's instructions), and
# group_sum's loop over the block's 32 warp sums (every thread, 32 shared loads) was ~130 of its
# ~345 instructions a warp. B3 reduces with block_rows_sum (one shared load a lane, shuffles).
# B3's build default is 4 vectors an iteration, which spills at __launch_bounds__(1024): every
# setting here names U. One question, with what the session's device time allows (~400 s):
#   - ours alone, 2 runs alternating: off (the register / dense paths), U = 1 in up to 1024
#     threads, U = 2 in 512; then the two-pass tests at U = 1 if time is left.
# Files: $OUT/cc3.log, $OUT/cc3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
CALL_BUDGET=${CALL_BUDGET:-280}
experiment_start cc3
use_prebuilt B3 | tee -a "$LOG"

LONG=1x4096x8192,1x16384x8192
log "A/B: D = 8192, ours alone, bf16"
AB_ARGS="--shapes $LONG" AB_DTYPES=bf16 AB_SWEEP_LIMIT=30 \
  knob_ab rms_norm,fused_add_rms_norm "$W/ab" "off=LTX_RMS_TWO_PASS=0" \
  "u1=LTX_RMS_TWO_PASS_U=1" "u2=LTX_RMS_TWO_PASS_U=2,LTX_RMS_TWO_PASS_THREADS=512" \
  | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab
if fits 60; then
  log "tests: the two-pass path at U = 1"
  LTX_RMS_TWO_PASS_U=1 run_tests tests-u1 50 -n 14 tests/test_rms_norm.py \
    -k "cuda and (two_pass or long_rows or many_rows)"
fi
experiment_end
