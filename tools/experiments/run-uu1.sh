#!/usr/bin/env bash
# Run UU, device call 1 (2026-12-07, seventh session of the day; any card). On an H200: issue
# 5's LTX step on the current source first (run-rr1.sh, RR1_LTX_ONLY=290 on TT0: fused
# projections have never run on an H200), then run-tt4.sh (change 100) in what is left of the
# call. On another card: run-tt4.sh alone. Carry `.site/site-h.tar.xz`, `.prebuilt/TT0.tar.xz`.
# CALL_BUDGET (default 540) bounds the whole call; each script gets what is left of it.
# Files: $OUT/rr1.log (H200 only), $OUT/tt4.log, and the scripts' packed files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_prebuilt.sh
T0=$(date +%s)
TOTAL=${CALL_BUDGET:-540}
if on_h200; then
  RR1_PREBUILT=TT0 RR1_LTX_ONLY=290 CALL_BUDGET=$TOTAL bash tools/experiments/run-rr1.sh
fi
CALL_BUDGET=$(( TOTAL - ($(date +%s) - T0) )) bash tools/experiments/run-tt4.sh
