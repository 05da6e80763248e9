#!/usr/bin/env bash
# Run FF, device call 2, on G1 (G0 with LTX_RMS_BULK_CHUNK: a row in several bulk copies of
# at most CHUNK bytes on the slot's barrier, a loop in the kernel's `issue`, not kept as a
# patch; carry [".whl-h", ".prebuilt"]). Call 1 found the
# bulk path correct and 1.08-1.58x slower than HEAD's paths, slowest at the longest rows
# (16 KB a copy): is one copy's bytes what the copy engine serializes?
#   1. knob A/B, ours alone, bf16, rms_norm, 2 rounds a sweep: off, on (one copy a row), on
#      in copies of 4 KB, of 1 KB, and of 1 KB with 3 slots a warp;
#   2. while the call has time: test_stage_knobs.py's rms-bulk settings.
# Files: $OUT/ff2.log, $OUT/ff2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ff2
use_prebuilt G1 | tee -a "$LOG"
SHAPES=1x4096x8192,1x16384x8192,2x2688x4096,1x16384x4096,2x2688x2048
ON=LTX_RMS_BULK=1
log "A/B: RMSNorm's bulk path in chunks, ours alone, bf16, 2 rounds a sweep"
AB_DTYPES=bf16 AB_ARGS="--rounds 2 --shapes $SHAPES" AB_SWEEP_LIMIT=30 \
  knob_ab rms_norm "$W/ab" "off=LTX_RMS_BULK=0" "on=$ON" "c4k=$ON,LTX_RMS_BULK_CHUNK=4096" \
  "c1k=$ON,LTX_RMS_BULK_CHUNK=1024" "c1k3=$ON,LTX_RMS_BULK_CHUNK=1024,LTX_RMS_BULK_STAGES=3" \
  | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab
fits 230 && run_tests tests-knob-bulk 220 -k "rms-bulk" tests/test_stage_knobs.py
experiment_end
