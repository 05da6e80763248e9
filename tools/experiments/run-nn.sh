#!/usr/bin/env bash
# Run NN (PERFORMANCE.md): the calls on the H100 lease of 2026-12-07, as they ran. Carry as
# run-mm1.sh ([".site/site-h.tar.xz", ".prebuilt/MM0.tar.xz"], SITE_TAR=.site/site-h.tar.xz).
#   call 1: CALL_BUDGET=480 bash tools/experiments/run-mm4.sh (memcheck and racecheck of every op
#           family, then, on a card other than the H200, issue 4's full bf16 table);
#   call 2: bash tools/experiments/run-nn.sh 2   racecheck of every op family alone (call 1's was
#           cut at its 55 s);
#   call 3: bash tools/experiments/run-nn.sh 3   LTX 2B kernels + compile in its own process;
#   call 4: bash tools/experiments/run-nn.sh 4   LTX 2B compile in its own process (cut at 100 s:
#           the budget left was too short for its warmup).
# Files: $OUT/nn<call>.log and $OUT/nn<call>-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
call=${1:?usage: run-nn.sh 2|3|4}
case $call in
  2) export CALL_BUDGET=${CALL_BUDGET:-330} ;;
  3) export CALL_BUDGET=${CALL_BUDGET:-190} ;;
  4) export CALL_BUDGET=${CALL_BUDGET:-125} ;;
  *) echo "run-nn.sh: no call $call (1 is run-mm4.sh)" >&2; exit 2 ;;
esac
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start "nn$call"
use_prebuilt MM0 | tee -a "$LOG"
export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS
case $call in
  2) SANITIZE_TOOLS=racecheck sanitize all "$(time_left)" ;;
  3) ltx_time kernels+compile 150 ;;
  4) ltx_time compile 100 ;;
esac
experiment_end
