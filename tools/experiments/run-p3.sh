#!/usr/bin/env bash
# Run P, device call 3, on T (27847b3: change 41's wide row path, reverted after call 1)
# (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): Nsight Compute (full set) of ours (the wide
# kernels: one vector a thread) and torch.compile's kernels for gated_residual_adaln, adaln and
# rms_norm at LTX 2B's 2x2688x2048 bf16: the same layout, and compile's faster; what differs.
# Files: $OUT/p3.log, $OUT/ncu-details.txt, $OUT/ncu-summary.csv.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start p3
use_prebuilt T | tee -a "$LOG"
log "ncu: gated_residual_adaln, adaln, rms_norm at 2x2688x2048; ours (wide) and compile"
NCU_IMPLS=ltx,compile ncu_full gated_residual_adaln:2x2688x2048 adaln:2x2688x2048 \
  rms_norm:2x2688x2048
log done
