#!/usr/bin/env bash
# Run EE, device call 1, on E0 (8948190's CUDA source with tools/experiments/rms_packed.patch:
# RMSNorm's packed register path, rms_norm_packed_kernel, on by default on sm_90 for 16-bit
# rows of more than 512 vectors beyond the dense path's 8 MiB; built for sm_90 here; carry
# [".whl", ".prebuilt"], fetch_wheels.sh's wheels; the patch was rejected after this call and its tests and knob
# settings went with it: test_rms_norm_packed_rows is test_rms_norm_register_rows now):
#   1. the CUDA tests of rms_norm.cu: test_rms_norm.py at the defaults (its new
#      test_rms_norm_packed_rows among them);
#   2. knob A/B at the long rows, ours with torch.compile beside it in every sweep, 2 rounds:
#      the defaults (packed, 6 blocks an SM) against the register path (LTX_RMS_PACKED_MIN_VEC=0,
#      run DD's kernel) and against 8 blocks an SM;
#   3. while the call has time: test_stage_knobs.py's rms-packed settings (every register-path
#      row length sent to the packed kernel, at 6 and at 8 blocks an SM), then compute-sanitizer
#      memcheck and racecheck of the rms_norm families (rms_norm_grids: the packed path's grid).
# Files: $OUT/ee1.log, $OUT/ee1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ee1
use_prebuilt E0 | tee -a "$LOG"

log "tests: test_rms_norm.py (CUDA), 16 workers"
run_tests tests-rms 150 -n 16 -k cuda tests/test_rms_norm.py

LONG=1x4096x8192,1x16384x8192,1x16384x4096,8x8192x4096
if fits 240; then
  log "A/B: RMSNorm's packed path, ours and torch.compile, bf16 and fp16, 2 rounds a sweep"
  AB_PEER=compile AB_ARGS="--rounds 2 --shapes $LONG" AB_SWEEP_LIMIT=45 \
    knob_ab rms_norm "$W/ab" "def=" "off=LTX_RMS_PACKED_MIN_VEC=0" \
    "b8=LTX_RMS_PACKED_BLOCKS=8" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/ab.tar.gz" ab
fi

log "tests: the rms-packed knob settings"
fits 100 && run_tests tests-knob-packed 100 -k "rms-packed" tests/test_stage_knobs.py
fits 100 && sanitize rms 50 rms_norm_grids rms_norm
experiment_end
