#!/usr/bin/env bash
# Run FF, device call 1, on G0 (HEAD's CUDA source with tools/experiments/rms_bulk_warp.patch,
# RMSNorm's bulk path: rms_norm.cu's rms_norm_bulk_kernel, persistent warps pipelining whole
# rows into shared memory with the copy engine, cp.async.bulk on mbarriers, a warp a row; on
# by default on sm_90 for rows of more than 512 vectors with at least 8 MiB of x, in both
# ops; built for sm_90 here; carry [".whl-h", ".prebuilt"]; rejected after calls 1-2, its
# tests and knob settings went with it and are in tools/experiments/rms_bulk_block.patch). In order, each later step only while the call has time for it:
#   1. the CUDA tests of rms_norm.cu at the defaults (test_rms_norm_bulk_rows among them);
#   2. knob A/B, ours alone, bf16, 2 rounds a sweep: the bulk path off (HEAD's kernels), on
#      for every shape of the list (LTX_RMS_BULK=1: also D = 2048-4096), and on with 3 slots
#      a warp;
#   3. the same shapes with torch.compile and Liger beside ours, the bulk path on for every
#      shape (3 shuffled rounds);
#   4. test_stage_knobs.py's rms-bulk settings, then compute-sanitizer memcheck and racecheck
#      of the rms_norm families (rms_norm_grids at the defaults: the bulk path's grid; every
#      SHAPES grid with the bulk path on).
# Files: $OUT/ff1.log, $OUT/ab.tar.gz, $OUT/peers.tar.gz, test and sanitizer logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ff1
use_prebuilt G0 | tee -a "$LOG"

log "tests: test_rms_norm.py (CUDA), 16 workers"
run_tests tests-rms 150 -n 16 -k cuda tests/test_rms_norm.py

SHAPES=1x4096x8192,1x16384x8192,1x16384x4096,8x8192x4096,2x2688x4096,1x4096x4096,2x2688x2048,2x6144x2048,2x4096x3072,1x4096x2048
BOTH=LTX_RMS_BULK=1,LTX_ADD_RMS_BULK=1
if fits 200; then
  log "A/B: RMSNorm's bulk path, ours alone, bf16, 2 rounds a sweep"
  AB_DTYPES=bf16 AB_ARGS="--rounds 2 --shapes $SHAPES" AB_SWEEP_LIMIT=40 \
    knob_ab rms_norm,fused_add_rms_norm "$W/ab" "off=LTX_RMS_BULK=0,LTX_ADD_RMS_BULK=0" \
    "on=$BOTH" "s3=$BOTH,LTX_RMS_BULK_STAGES=3,LTX_ADD_RMS_BULK_STAGES=3" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/ab.tar.gz" ab
fi
if fits 130; then
  log "peers beside the bulk path (every shape), bf16, 3 shuffled rounds"
  env ${BOTH//,/ } timeout 120 python3 benchmarks/sweep.py --impls ltx,compile,liger \
    --dtypes bf16 --ops rms_norm,fused_add_rms_norm --rounds 3 --order shuffle \
    --shapes "$SHAPES" --out "$W/peers-bulk" 2>&1 | tail -1
  grep -E "^\| [a-z_]+ \| [0-9x]+ \| bf16 \|" "$W/peers-bulk/sweep.md" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/peers.tar.gz" peers-bulk
fi
log "tests: the rms-bulk knob settings"
fits 100 && run_tests tests-knob-bulk 100 -k "rms-bulk" tests/test_stage_knobs.py
fits 60 && sanitize rms 50 rms_norm_grids
fits 60 && LTX_RMS_BULK=1 LTX_ADD_RMS_BULK=1 sanitize rms-bulk 50 rms_norm
experiment_end
