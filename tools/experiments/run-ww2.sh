#!/usr/bin/env bash
# Run WW, device call 2 (2026-12-08; an H200 wanted, any card runs it). Issue 4's largest H200
# gap, RMSNorm at D = 8192 (torch.compile 0.94x / 0.96x ahead, runs DD, RR), and the table:
# 1. knob_ab of the two-pass path's cache priorities, the defaults (plain loads) against
#    LTX_RMS_TWO_PASS_HINTS=1 (inductor's: L1 and L2 evict-last on the row's first read and the
#    weight, evict-first on its second; run WW found from the SASS that compile's kernel is this
#    path's layout, so these are what is left to differ besides ~90 SASS instructions), bf16,
#    1x4096x8192 and 1x16384x8192, torch.compile in every sweep, 2 rounds a sweep, twice;
# 2. test_stage_knobs.py's rms-two-pass-256 setting (its NV = 2 rows take the hints), while
#    the call has time;
# 3. issue 4's full bf16 table on the current source, every op, shape and peer, 3 shuffled
#    rounds (the last H200 table, run DD's, predates the erf GELU of 216d5fc).
# Carry `.site/site-h.tar.xz`, `.prebuilt/WW0.tar.xz` (WW0: this source's kernels, sm_90).
# CALL_BUDGET (default 540) bounds it. Files: $OUT/ww2.log, $OUT/ww2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ww2
use_prebuilt "${WW2_PREBUILT:-WW0}" | tee -a "$LOG"
if fits 120; then
  log "knob_ab: rms_norm's two-pass path, plain loads against inductor's cache priorities"
  AB_DTYPES=bf16 AB_SWEEP_LIMIT=45 AB_PEER=compile \
    AB_ARGS="--shapes 1x4096x8192,1x16384x8192 --rounds 2" \
    knob_ab rms_norm "$W/hints" def= hints=LTX_RMS_TWO_PASS_HINTS=1 2>&1 | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/hints.tar.gz" hints 2>/dev/null
fi
left=$(time_left)
full_table bf16 "$(( left < 320 ? left : 320 ))"
fits 130 && knob_tests knobs-two-pass "$(( $(time_left) - 10 ))" rms-two-pass-256
experiment_end
