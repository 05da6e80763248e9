#!/usr/bin/env bash
# Run RR, device call 2. On an H200: issue 5's every configuration in one process, LLaMA-8B and
# memcheck (issue5_all, run-rr1.sh's step) on RR0. On another card: change 99, RMSNorm's
# two-pass path (rms_norm.cu, LTX_RMS_TWO_PASS, off at the defaults): its knob tests, then
# `knob_ab` of the defaults against three of its settings with torch.compile timed in every
# sweep (bf16, D = 8192 where compile leads, and D = 2048 / 4096 for the 256-thread setting).
# RR0: the tree with the two-pass path, sm_90, built here against torch 2.11+cu130. Carry
# `.site/site-h.tar.xz`, `.prebuilt/RR0.tar.xz`. Files: $OUT/rr2.log, $OUT/rr2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start rr2
use_prebuilt RR0 | tee -a "$LOG"

if on_h200; then
  issue5_all
else
  knob_tests knobs-two-pass 150 pass
  log "knob_ab: RMSNorm's two-pass path against the defaults, torch.compile beside"
  AB_DTYPES=bf16 AB_PEER=compile AB_SWEEP_LIMIT=45 \
    AB_ARGS="--shapes 1x4096x8192,1x16384x8192,1x4096x4096,2x2688x2048,8x8192x4096" \
    knob_ab rms_norm "$W/ab" def= \
    tp512=LTX_RMS_TWO_PASS=1 \
    tp512plain=LTX_RMS_TWO_PASS=1,LTX_RMS_TWO_PASS_HINT=0 \
    tp256=LTX_RMS_TWO_PASS=1,LTX_RMS_TWO_PASS_MIN_VEC=1,LTX_RMS_TWO_PASS_THREADS=256 \
    2>&1 | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/ab.tar.gz" ab
fi
experiment_end
