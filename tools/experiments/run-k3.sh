#!/usr/bin/env bash
# Run K, device call 3, on G: F with call 2's choices (the gated AdaLN staged in 2 warps a row,
# only from 24 rows per SM). Carry [".whl-h", ".prebuilt"], WHEELS=.whl-h.
#   - tests/test_stage_knobs.py, one setting after another with the whole GPU (call 2 ran the
#     defaults' rms_norm / adaln tests on F and cut these at 200 s with 4 run side by side)
#   - LTX-Video 2B end to end (gpu_e2e.sh part ltx: eager, compile, kernels, kernels+compile)
#   - the five row ops against every peer, bf16 (the table)
# Few files come back: $OUT/k3.log, $OUT/k3.tar.gz and gpu_e2e's e2e.log / e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/k3.log
W=/tmp/k3
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
use_prebuilt G || exit 1
log "tests G: knob settings (tests/test_stage_knobs.py), one at a time"
LTX_KNOB_TEST_WORKERS=14 timeout 230 python3 -m pytest -q -rA -p no:cacheprovider \
  tests/test_stage_knobs.py 2>&1 | grep -E "^(PASSED|FAILED|ERROR)|passed|failed|Error" \
  | tail -12 | tee -a "$LOG"
log "e2e ltx"
PREBUILT=G PARTS=ltx timeout 175 bash tools/gpu_e2e.sh > /dev/null 2>&1
grep -E "ms/step|per step|against|device|eager|compile|kernels" "$OUT/e2e.log" | tail -16 \
  | tee -a "$LOG"
use_prebuilt G > /dev/null
log "sweep G-peers: the five row ops, bf16, every peer"
timeout 120 python3 benchmarks/sweep.py --dtypes bf16 \
  --ops rms_norm,fused_add_rms_norm,adaln,adaln_per_token,gated_residual_adaln --out "$W/G-peers" \
  2>&1 | tail -1 | tee -a "$LOG"
cat "$W/G-peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/k3.tar.gz" .
log done
