#!/usr/bin/env bash
# Run FF, device call 3, on G2 (HEAD's CUDA source with tools/experiments/rms_bulk_block.patch,
# the bulk path's second version, rejected after this call:
# rms_norm_bulk_kernel as the register path's layout, a block of up to 256 threads a row, 4
# vectors a thread, fed by the copy engine through `stages` slots a persistent block, 3
# blocks an SM; calls 1-2's warp-a-row version was 1.08-1.58x slower than HEAD's paths and
# is tools/experiments/rms_bulk_warp.patch; carry [".whl-h", ".prebuilt"]). In order, each
# later step only while the call has time for it:
#   1. knob A/B, ours alone, bf16, 2 rounds a sweep: off (HEAD's kernels), on for every
#      shape of the list (as many slots as shared memory holds), 4 blocks an SM, 2 slots;
#   2. the CUDA tests of rms_norm.cu that reach the bulk path at the defaults;
#   3. compute-sanitizer of the rms_norm families (the bulk path's grid at the defaults;
#      every SHAPES grid with it on);
#   4. ours with the bulk path on, torch.compile and Liger, 3 shuffled rounds;
#   5. test_stage_knobs.py's rms-bulk settings.
# Files: $OUT/ff3.log, $OUT/ff3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ff3
use_prebuilt G2 | tee -a "$LOG"
SHAPES=1x4096x8192,1x16384x8192,1x16384x4096,2x2688x4096,1x4096x4096,2x2688x2048,8x8192x4096
BOTH=LTX_RMS_BULK=1,LTX_ADD_RMS_BULK=1
log "A/B: RMSNorm's bulk path (blocks), ours alone, bf16, 2 rounds a sweep"
AB_DTYPES=bf16 AB_ARGS="--rounds 2 --shapes $SHAPES" AB_SWEEP_LIMIT=30 \
  knob_ab rms_norm,fused_add_rms_norm "$W/ab" "off=LTX_RMS_BULK=0,LTX_ADD_RMS_BULK=0" \
  "on=$BOTH" "b4=$BOTH,LTX_RMS_BULK_BLOCKS=4,LTX_ADD_RMS_BULK_BLOCKS=4" \
  "s2=$BOTH,LTX_RMS_BULK_STAGES=2,LTX_ADD_RMS_BULK_STAGES=2" | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab
log "tests: test_rms_norm.py's bulk-path tests at the defaults"
fits 90 && run_tests tests-rms 80 -n 16 -k "cuda and (bulk_rows or register_rows or many_rows)" \
  tests/test_rms_norm.py
fits 50 && sanitize rms 20 rms_norm_grids
fits 50 && LTX_RMS_BULK=1 LTX_ADD_RMS_BULK=1 sanitize rms-bulk 20 rms_norm
if fits 100; then
  log "peers beside the bulk path (every shape), bf16, 3 shuffled rounds"
  env ${BOTH//,/ } timeout 90 python3 benchmarks/sweep.py --impls ltx,compile,liger \
    --dtypes bf16 --ops rms_norm,fused_add_rms_norm --rounds 3 --order shuffle \
    --shapes "$SHAPES" --out "$W/peers-bulk" 2>&1 | tail -1
  grep -E "^\| [a-z_]+ \| [0-9x]+ \| bf16 \|" "$W/peers-bulk/sweep.md" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/peers.tar.gz" peers-bulk
fi
fits 60 && run_tests tests-knob-bulk $(( ${CALL_BUDGET:-560} - $(date +%s) + CALL_T0 - 10 )) \
  -k "rms-bulk" tests/test_stage_knobs.py
experiment_end
