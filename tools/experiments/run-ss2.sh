#!/usr/bin/env bash
# Run SS, device call 2, on an H200 only: issue 5's every configuration in one process on SS0
# (the current source; fused projections have never run on an H200), then LLaMA-8B prefill and
# memcheck of every op family while the call has time (issue5_all). Another card gets the card
# check and nothing else (runs QQ, PP and OO measured the H100 branch). Carry
# `.site/site-h.tar.xz`, `.prebuilt/SS0.tar.xz`. Files: $OUT/ss2.log, $OUT/ss2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_prebuilt.sh
if ! on_h200; then
  nvidia-smi --query-gpu=name --format=csv,noheader
  echo "not an H200: nothing run"
  exit 0
fi
source tools/gpu_env.sh
experiment_start ss2
use_prebuilt SS0 | tee -a "$LOG"
issue5_all
experiment_end
