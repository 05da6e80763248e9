#!/usr/bin/env bash
# Run BB, device call 5, on B1 (HEAD's kernels by default; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h). Calls 3 and 4: Liger's RMSNorm is 9-10% faster in every sweep process that
# also times torch.compile's kernel, not because of the ptxas inductor points Triton to (call 4);
# ours gained 3% only where it sat next to compile's kernel in the order (sweep.py's table order
# always puts Liger right after compile). Is it the neighbour, not the process?
# tools/experiments/rms_norm_neighbours.py in three processes: Liger never next to compile's
# kernel (liger, ltx, compile, then reversed), Liger next to it (ltx, compile, liger), and no
# compile at all (liger, ltx, eager). Written first with inductor's compile workers and a second
# CUDA context as the questions; changed to this when the session had ~250 s of device time
# left (CALL_BUDGET sets what `fits` allows). NOT RUN: two attempts found no machine, and the
# device time they cost left too little to start one; the next session's first question.
# Ran as this loop inside run CC's first call (run-cc1.sh; PERFORMANCE.md, change 84).
# Files: $OUT/bb5.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start bb5
use_prebuilt B1 | tee -a "$LOG"
for order in liger,ltx,compile ltx,compile,liger liger,ltx,eager; do
  fits 35 || break
  log "order $order"
  timeout 45 python3 tools/experiments/rms_norm_neighbours.py --order "$order" 2>&1 \
    | grep -E "^order|Error|error" | tee -a "$LOG"
done
log done
