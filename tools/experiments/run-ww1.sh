#!/usr/bin/env bash
# Runs VV-WW, device call 1 (written in run VV, 2026-12-08, as run-vv1.sh; no machine came in
# either session). Any card, an H200 wanted. On an H200: issue 5 on the current source
# (run-rr1.sh on WW0, every configuration in one process, then LLaMA-8B and memcheck: fused
# projections have never run on an H200). On another card (an H100):
# 1. tools/experiments/label_effect.py (~1-2 min): the same RMSNorm work under its two labels,
#    4x1024x2048 and 1x4096x2048, where the H100's peers swap times (runs NN, UU: Liger 17.7 /
#    14.5 us, F.rms_norm 15.8 / 18.9; ours 17.0 / 17.2): the sweep's procedure replayed per
#    label, random orders of one build, builds moved by pads, both shapes in one order; which
#    of order, allocation or shape moves a time, and ours against each peer over every build.
# 2. RMSNorm's short dense layout at D = 2048, where the table has the H100 at 0.85x of Liger:
#    knob_ab of ours in bf16 beside Liger, the defaults (two vectors a thread, rows 128 threads
#    wide, 2 rows a block of 256) against one row a block of 128, 4 rows a block of 512, and
#    one vector a thread (rows 256 wide: Liger's layout, 8 warps a row) in blocks of 256 and
#    512, at both labels of the work;
# 3. Nsight Compute's stall reasons of ours and Liger at 1x4096x2048 and 4x1024x2048.
# Carry `.site/site-h.tar.xz`, `.prebuilt/WW0.tar.xz` (WW0: run WW's kernels, sm_90).
# CALL_BUDGET (default 540) bounds it. Files: $OUT/rr1.log or $OUT/ww1.log, and packed files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_prebuilt.sh
if on_h200; then
  RR1_PREBUILT=WW0 CALL_BUDGET=${CALL_BUDGET:-540} exec bash tools/experiments/run-rr1.sh
fi
source tools/gpu_env.sh
experiment_start ww1
use_prebuilt WW0 | tee -a "$LOG"
if fits 200; then
  log "label_effect: rms_norm 4096 rows of 2048 under both labels (every implementation, bf16)"
  timeout 180 python3 tools/experiments/label_effect.py --out "$W/label" 2>&1 | tail -80 \
    | tee -a "$LOG"
  cp "$W"/label/label_effect.* "$OUT"/ 2>/dev/null
fi
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
