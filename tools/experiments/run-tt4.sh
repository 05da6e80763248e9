#!/usr/bin/env bash
# Run TT, device call 4 (written 2026-12-07 for the next lease; any card, the H200 first):
# RMSNorm's dense kernel with the weight loaded after the reduction and the row held as loaded
# (rms_norm.cu, LATE_W, LTX_RMS_DENSE_LATE_W=1; off by default). Two 16-byte vectors a thread
# then fit 32 registers (the default layout holds the row's floats and the weight across the
# reduction: 48, so 2 blocks of 512 an SM), so at D = 8192 with LTX_RMS_DENSE_MAX_MB=0 (no
# size limit: the dense path before the two-pass one) the kernel is one pass in 4 blocks of
# 512 an SM: torch.compile's occupancy (32 registers) without its second read of the row, and
# Liger's one-pass layout (39 registers, 3 blocks) with a block more. Steps, each while the call
# has time: memcheck / racecheck of rms_norm's families under the setting; its knob test
# (test_stage_knobs.py rms-dense-late-weight); knob_ab of ours alone in bf16 at 9 shapes of
# rms_norm and fused_add_rms_norm: def (defaults), dense (MAX_MB=0: the early-weight dense
# kernel at every size), late (LATE_W and MAX_MB=0), two runs each; then ours under `late`
# beside every peer at D = 8192 (3 shuffled rounds). Carry `.site/site-h.tar.xz`,
# `.prebuilt/TT0.tar.xz` (TT0: this source, sm_90). CALL_BUDGET bounds it.
# Files: $OUT/tt4.log, $OUT/tt4-files.tar.gz. Ran in run UU (H100); the knob was then reverted:
# on a later source, apply tools/experiments/rms_dense_late_weight.patch and rebuild first.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start tt4
use_prebuilt TT0 | tee -a "$LOG"

fits 60 && LTX_RMS_DENSE=1 LTX_RMS_DENSE_LATE_W=1 LTX_RMS_DENSE_MAX_MB=0 \
  sanitize late-w 40 rms_norm rms_norm_two_pass
fits 160 && knob_tests knobs-late-w 150 rms-dense-late-weight
if fits 220; then
  log "knob_ab: the dense kernel's late weight against the defaults (ours alone, bf16)"
  AB_DTYPES=bf16 AB_SWEEP_LIMIT=40 \
    AB_ARGS="--shapes 1x1024x4096,1x4096x4096,1x16384x4096,1x4096x2048,1x4096x8192,1x16384x8192,2x2688x2048,2x4096x3072,8x8192x4096" \
    knob_ab rms_norm,fused_add_rms_norm "$W/ab" def= \
    dense=LTX_RMS_DENSE_MAX_MB=0 \
    late=LTX_RMS_DENSE_LATE_W=1,LTX_RMS_DENSE_MAX_MB=0 \
    2>&1 | tee -a "$LOG"
fi
fits 70 && LTX_RMS_DENSE_LATE_W=1 LTX_RMS_DENSE_MAX_MB=0 \
  PEER_ARGS="--shapes 1x4096x8192,1x16384x8192 --rounds 3 --monitor" \
  peer_sweeps rms_norm "$W" 60 bf16
tar -C "$W" -czf "$OUT/ab.tar.gz" . 2>/dev/null
experiment_end
