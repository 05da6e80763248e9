#!/usr/bin/env bash
# Run BB, device call 2, on B1 (its defaults are HEAD's kernels: LTX_RMS_DENSE_LATE unset is
# the early order; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h). Call 1 rejected the late
# weight loads (occupancy 56 -> 85-89% warps active, time unchanged) and found ours level or
# ahead of Liger in sweeps of the two alone, where the table's sweep of every peer has Liger
# 9% ahead at 2x2688x2048. So: does the output's address decide it? Ours and Liger writing to
# the same views of one buffer at 12 offsets (tools/experiments/rms_norm_out_address.py), with
# the zeroing flush at the three shapes run AA profiled, then the read flush at 2x2688x2048.
# Files: $OUT/bb2.log, $OUT/bb2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start bb2
use_prebuilt B1 | tee -a "$LOG"
log "output address: zeroing flush"
timeout 200 python3 tools/experiments/rms_norm_out_address.py 2>&1 | tee "$OUT/address-zero.md" \
  | tee -a "$LOG"
if fits 80; then
  log "output address: read flush, 2x2688x2048"
  timeout 80 python3 tools/experiments/rms_norm_out_address.py --flush read \
    --shapes 2x2688x2048 2>&1 | tee "$OUT/address-read.md" | tee -a "$LOG"
fi
experiment_end
