#!/usr/bin/env bash
# Run BB, device call 1, on B1 (554aa13's CUDA source plus rms_norm.cu's LATE instances, chosen
# by LTX_RMS_DENSE_LATE=1: tools/experiments/rms_dense_late.patch; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h). One question, issue 4's
# largest cluster of misses (RMSNorm 0.91-0.99x Liger at 15 of 18 shapes):
#   - does RMSNorm's dense kernel with the weight loaded after the reduction and x held packed
#     across it (LATE: 48 -> 32 registers for bf16 rows of two vectors a thread, 5 -> 8 blocks
#     of 256 an SM; fused_add_rms_norm's one vector a thread 39 -> 30) close the gap to Liger
#     under the table's zeroing flush? Ours early / late, each sweep timing Liger beside ours in
#     the same process (--impls ltx,liger, 2 rounds), early, late, late in Liger's layout
#     (one row of one vector a thread a block), then in reverse order
#   - first the late kernel's correctness: test_rms_norm.py's CUDA tests on the dense path at
#     every grid with LATE=1 in its three layouts (defaults; two vectors a thread everywhere;
#     one vector a thread in 512-thread blocks)
#   - if time is left, Nsight Compute (NCU_FLUSH=zero, application replay) of ours early / late
#     and Liger at the three shapes run AA profiled: warps active, DRAM throughput, time
# Files: $OUT/bb1.log, $OUT/bb1-files.tar.gz. (The call ran with ncu's command inline; gpu_prebuilt.sh's
# ncu_flush is the same command.)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start bb1
use_prebuilt B1 | tee -a "$LOG"

SEL="cuda and not misaligned and not long_rows and not huge"
log "tests: rms_norm dense path, LATE=1, default layouts"
LTX_RMS_DENSE=1 LTX_RMS_DENSE_LATE=1 run_tests tests-late 90 -n 14 -x tests/test_rms_norm.py -k "$SEL"
log "tests: rms_norm dense path, LATE=1, two vectors a thread"
LTX_RMS_DENSE=1 LTX_RMS_DENSE_LATE=1 LTX_RMS_DENSE_VPT=2 \
  run_tests tests-late-vpt2 90 -n 14 -x tests/test_rms_norm.py -k "$SEL"
log "tests: rms_norm dense path, LATE=1, one vector a thread, 512-thread blocks"
LTX_RMS_DENSE=1 LTX_RMS_DENSE_LATE=1 LTX_RMS_DENSE_VPT=1 LTX_RMS_DENSE_THREADS=512 \
  run_tests tests-late-wide 90 -n 14 -x tests/test_rms_norm.py -k "$SEL"

log "A/B: early / late / late in Liger's layout, Liger beside ours, bf16, 2 rounds a sweep"
AB_PEER=liger AB_ARGS="--rounds 2" AB_DTYPES=bf16 AB_SWEEP_LIMIT=75 \
  knob_ab rms_norm,fused_add_rms_norm "$W/ab" "early=LTX_RMS_DENSE_LATE=0" \
  "late=LTX_RMS_DENSE_LATE=1" \
  "late1=LTX_RMS_DENSE_LATE=1,LTX_RMS_DENSE_VPT=1,LTX_RMS_DENSE_THREADS=256" | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab

for side in early late; do
  fits 50 || break
  log "ncu, RMSNorm $side (and Liger with early), NCU_FLUSH=zero, application replay"
  impls=ltx
  [[ $side == early ]] && impls=ltx,liger
  LTX_RMS_DENSE_LATE=$([[ $side == late ]] && echo 1 || echo 0) ncu_flush "$side" zero "$impls" 50 \
    rms_norm:2x2688x2048 rms_norm:1x4096x4096 rms_norm:2x2688x4096
done
experiment_end
