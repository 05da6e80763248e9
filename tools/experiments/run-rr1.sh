#!/usr/bin/env bash
# Run RR, device call 1 (2026-12-07, fourth session of the day). Only on an H200: issue 5's
# every configuration in one process with the current source (fused projections have never
# run on an H200), LLaMA-8B and memcheck (issue5_all, as run-qq1.sh's H200 branch). Runs QQ,
# PP and OO measured the H100 branch twice over on this source, so another card gets nothing
# but the card check here. Carry as run-qq1.sh (`.site/site-h.tar.xz`, `.prebuilt/MM0.tar.xz`);
# CALL_BUDGET bounds it; RR1_PREBUILT names another prebuilt than MM0 (RR2 after change 99; SS0,
# run SS's source); RR1_LTX_ONLY=SECONDS runs the LTX step alone under that limit (run TT: the
# ~500 s of device time left did not hold LLaMA and memcheck after it; both ran on this source
# on the H100, runs QQ and OO).
# Files: $OUT/rr1.log and each step's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_prebuilt.sh
only_on_h200 || exit 0
source tools/gpu_env.sh
experiment_start rr1
use_prebuilt "${RR1_PREBUILT:-MM0}" | tee -a "$LOG"
if [[ -n ${RR1_LTX_ONLY:-} ]]; then issue5_ltx "$RR1_LTX_ONLY"; else issue5_all; fi
experiment_end
