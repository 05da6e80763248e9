#!/usr/bin/env bash
# Run RR, device call 1 (2026-12-07, fourth session of the day). Only on an H200: issue 5's
# every configuration in one process with the current source (fused projections have never
# run on an H200), LLaMA-8B and memcheck (issue5_all, as run-qq1.sh's H200 branch). Runs QQ,
# PP and OO measured the H100 branch twice over on this source, so another card gets nothing
# but the card check here. Carry as run-qq1.sh (`.site/site-h.tar.xz`, `.prebuilt/MM0.tar.xz`);
# CALL_BUDGET bounds it; RR1_PREBUILT names another prebuilt than MM0 (RR2 after change 99; SS0,
# run SS's source).
# Files: $OUT/rr1.log and each step's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  nvidia-smi --query-gpu=name --format=csv,noheader
  echo "not an H200: nothing run"
  exit 0
fi
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start rr1
use_prebuilt "${RR1_PREBUILT:-MM0}" | tee -a "$LOG"
issue5_all
experiment_end
