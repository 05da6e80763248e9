#!/usr/bin/env bash
# Run OO, device call 2 (after call 1 and run-mm1.sh ran on an H100): on an H200, run-mm1.sh's
# steps (issue 5's every configuration in one process, LLaMA-8B, memcheck); on another card,
# LTX 2B at issue 5's setting, kernels + compile and torch.compile each in its own process
# (run-mm3.sh's first two steps: the spread beside run-mm1.sh's one-process numbers, and the
# compile baseline run NN's call 4 did not reach). Carry as run-mm1.sh; CALL_BUDGET bounds it.
# Files: $OUT/oo2.log and each step's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start oo2
use_prebuilt MM0 | tee -a "$LOG"

if on_h200; then
  issue5_all
else
  issue5_pair
fi
experiment_end
