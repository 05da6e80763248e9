#!/usr/bin/env bash
# Run QQ, device call 1 (a new session; run PP's files were lost with the session that made
# them, only its numbers were noted). On an H200: issue 5's every configuration in one process,
# LLaMA-8B and memcheck (issue5_all, as run-oo2.sh). On another card: run PP again, so that its
# results have files: LTX 2B at issue 5's setting, kernels + compile and torch.compile each in
# its own process (run-oo2.sh's else-branch), then LLaMA-8B compile and kernels + compile in 15
# alternating rounds of 5 (run-pp2.sh) with the time left. Carry as run-oo2.sh; CALL_BUDGET
# bounds it. Files: $OUT/qq1.log and each step's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start qq1
use_prebuilt MM0 | tee -a "$LOG"

if on_h200; then
  issue5_all
else
  issue5_pair
  fits 200 && llama_rounds "$(time_left)"
fi
experiment_end
