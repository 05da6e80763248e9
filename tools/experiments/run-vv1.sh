#!/usr/bin/env bash
# Run VV, device call 1 (2026-12-08; any card, an H200 wanted). On an H200: issue 5 on the
# current source (run-rr1.sh on SS0, every configuration in one process, then LLaMA-8B and
# memcheck: fused projections have never run on an H200). On another card (an H100): RMSNorm's
# short dense layout at D = 2048, where the H100 sits at 0.85x of Liger (1x4096x2048: 17.3
# against 14.8 us, runs NN-UU; 0.98x on the H200, run DD) and no layout was measured on the
# H100: knob_ab of ours in bf16 beside Liger, the defaults (two vectors a thread, rows 128
# threads wide, 2 rows a block of 256) against one row a block of 128, 4 rows a block of 512,
# and one vector a thread (rows 256 wide: Liger's layout, 8 warps a row) in blocks of 256 and
# 512; then Nsight Compute's stall reasons of ours and Liger at 1x4096x2048 and 4x1024x2048.
# Run VV found most of that 0.85x is the case's label (PERFORMANCE.md): 4x1024x2048 is the same
# work, and there Liger takes 17.8 us; over both, ours is 0.95x. Both labels are timed here.
# Carry `.site/site-h.tar.xz`, `.prebuilt/SS0.tar.xz` (SS0: HEAD's kernels, sm_90).
# CALL_BUDGET (default 540) bounds it. Files: $OUT/rr1.log or $OUT/vv1.log, and packed files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_prebuilt.sh
if on_h200; then
  RR1_PREBUILT=SS0 CALL_BUDGET=${CALL_BUDGET:-540} exec bash tools/experiments/run-rr1.sh
fi
source tools/gpu_env.sh
experiment_start vv1
use_prebuilt SS0 | tee -a "$LOG"
if fits 330; then
  log "knob_ab: rms_norm's short dense layout at D = 2048 (ours and Liger, bf16)"
  AB_DTYPES=bf16 AB_SWEEP_LIMIT=30 AB_PEER=liger \
    AB_ARGS="--shapes 1x1024x2048,4x1024x2048,1x4096x2048,2x2688x2048,2x6144x2048,1x4096x4096" \
    knob_ab rms_norm "$W/ab" def= \
    v2t128=LTX_RMS_DENSE_THREADS=128 \
    v2t512=LTX_RMS_DENSE_THREADS=512 \
    v1t256=LTX_RMS_DENSE_VPT=1,LTX_RMS_DENSE_THREADS=256 \
    v1t512=LTX_RMS_DENSE_VPT=1,LTX_RMS_DENSE_THREADS=512 \
    2>&1 | tee -a "$LOG"
fi
tar -C "$W" -czf "$OUT/ab.tar.gz" . 2>/dev/null
fits 120 && NCU_METRICS=$NCU_STALL_METRICS ncu_flush rms-2048 zero ltx,liger "$(time_left)" \
  rms_norm:1x4096x2048 rms_norm:4x1024x2048
experiment_end
