#!/usr/bin/env bash
# Run PP, device call 2 (on the H100 that call 1, run-oo2.sh, left warm): issue 5's LLaMA-8B
# question with more rounds (llama_rounds: compile and kernels + compile alone, 15 alternating
# rounds of 5 forwards of 4096 tokens) under ${LLAMA_LIMIT:-300} s. Carry as run-oo2.sh. Files: $OUT/pp2.log,
# $OUT/pp2-files.tar.gz (llama-rounds.{log,json}).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start pp2
use_prebuilt MM0 | tee -a "$LOG"
llama_rounds "${LLAMA_LIMIT:-300}"
experiment_end
