#!/usr/bin/env bash
# Run CC, device call 2, on B2 (HEAD's CUDA source plus rms_norm.cu's two-pass path, change 81;
# carry [".whl-h", ".prebuilt"], WHEELS=.whl-h). Call 1 found torch.compile's RMSNorm kernel
# at D = 8192 a looped two-pass reduction (512 threads, 32 registers, 91% of the warps, x read
# again from the L2 with evict-last / evict-first hints): 124.0 us in Nsight Compute against
# our register path's 129.5 (55 registers, 47% of the warps). B2 adds that layout as a path of
# its own, on by default for rows of >= 1024 16-byte vectors from 64 MiB of x (sm_90):
#   1. correctness: test_rms_norm.py's CUDA tests at the defaults (its new two-pass test among
#      them);
#   2. knob A/B of ours alone (2 runs, alternating): the defaults (U = 1, up to 1024 threads),
#      off (call 1's paths), U = 2 in 512-thread blocks, and the path at D = 4096 too
#      (MIN_VEC = 512: 1x16384x4096, 8x8192x4096);
#   3. ours (defaults), torch.compile and Liger in one process at the long-row shapes, 3 rounds;
#   4. the knob tests that send every shape down the two-pass path (one vector a thread; two
#      vectors an iteration in 64-thread blocks) and the one that turns it off with the dense
#      paths (what sm_75 / sm_80 take);
#   5. Nsight Compute (full set) of ours and compile's kernel at 1x16384x8192.
# Files: $OUT/cc2.log, $OUT/cc2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start cc2
use_prebuilt B2 | tee -a "$LOG"

log "tests: test_rms_norm.py, CUDA, defaults"
run_tests tests-rms 100 -n 14 tests/test_rms_norm.py -k "cuda and not huge"
LONG=1x4096x8192,1x16384x8192,1x16384x4096,8x8192x4096
log "A/B: long rows, ours alone, bf16"
AB_ARGS="--shapes $LONG" AB_DTYPES=bf16 AB_SWEEP_LIMIT=40 \
  knob_ab rms_norm,fused_add_rms_norm "$W/ab" "tp=" "off=LTX_RMS_TWO_PASS=0" \
  "u2=LTX_RMS_TWO_PASS_U=2,LTX_RMS_TWO_PASS_THREADS=512" "d4k=LTX_RMS_TWO_PASS_MIN_VEC=512" \
  | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab

if fits 90; then
  log "ours, compile and Liger at the long rows, bf16, 3 rounds"
  timeout 90 python3 benchmarks/sweep.py --ops rms_norm,fused_add_rms_norm --shapes "$LONG" \
    --impls ltx,compile,liger --dtypes bf16 --rounds 3 --out "$W/peers" 2>&1 | tail -1
  grep -E "^\| [a-z_]+ \| [0-9x]+ \| bf16 \|" "$W/peers/sweep.md" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/peers.tar.gz" peers
fi

if fits 150; then
  log "knob tests: rms-two-pass, rms-two-pass-unrolled, dense-off"
  run_tests tests-knobs 150 tests/test_stage_knobs.py -k "two-pass or dense-off"
fi

if fits 70; then
  log "ncu full set: ours (two-pass) and compile at 1x16384x8192"
  NCU_IMPLS=ltx,compile NCU_LIMIT=70 ncu_full rms_norm:1x16384x8192 fused_add_rms_norm:1x16384x8192
fi
experiment_end
