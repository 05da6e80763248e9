#!/usr/bin/env bash
# Run DD, device call 1, on Y0 (HEAD's CUDA source, built for sm_90; carry [".whl-h",
# ".prebuilt"], WHEELS=.whl-h). Two steps, the second only while the call has time for it:
#   1. Issue 4's full table in bf16 (every op, shape and peer, 3 rounds, --monitor) with the
#      rounds' orders shuffled (`sweep.py --order shuffle`, run CC change 84): run Z's table
#      timed every case in the table's order and its reverse, so Liger always followed
#      torch.compile's kernel, which gives the implementation after it ~3%.
#   2. RMSNorm's long rows (D = 8192, and D = 4096 beyond the dense path's 44 MiB) on the
#      staged path, which caps rows at 384 vectors (512 for fused_add_rms_norm) by default:
#      knob A/B of ours alone, the defaults against LTX_STAGE_MAX_VEC=1024 with groups of 128
#      (the default cap) and 256 threads a row. Run J measured the staged path at D = 8192
#      before the dense path and the register path's tuning; change 83's two-pass path and
#      change 81's register layouts did not close the 4% to torch.compile there.
# Files: $OUT/dd1.log, $OUT/dd1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start dd1
use_prebuilt Y0 | tee -a "$LOG"

full_table bf16 400  # (as run, the table was packed as $OUT/sweeps.tar.gz)

LONG=1x4096x8192,1x16384x8192,1x16384x4096,8x8192x4096
if fits 130; then
  log "A/B: long rows on the staged path, ours alone, bf16, 2 rounds a sweep"
  AB_ARGS="--rounds 2 --shapes $LONG" AB_DTYPES=bf16 AB_SWEEP_LIMIT=40 \
    knob_ab rms_norm,fused_add_rms_norm "$W/ab" "def=" "st128=LTX_STAGE_MAX_VEC=1024" \
    "st256=LTX_STAGE_MAX_VEC=1024,LTX_STAGE_MAX_GROUP=256" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/ab.tar.gz" ab
fi
experiment_end
