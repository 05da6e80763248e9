#!/usr/bin/env bash
# Run N, device call 3, on O (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the gated_residual / AdaLN CUDA tests with LTX_GATED_RESIDUAL_FLAT_THREADS=128 (the
#     default committed after call 1; O's default is 256)
#   - call 2's kernels configuration ran at 70 ms a step with the host twice as slow as run M
#     in every configuration of that process: eager + kernels (--compare), one process each,
#     with the GPU monitor's clock-reasons query on, off, on (LTX_GPU_MONITOR_REASONS)
#   - LLaMA-8B-sized prefill, 4096 tokens, the four configurations, 3 rounds of 5 forwards
# Files: $OUT/n3.log (summary), $OUT/tests.log, $OUT/e2e.log, $OUT/e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
export LTX_GATED_RESIDUAL_FLAT_THREADS=128  # the committed default (O was built with 256)
LOG=$OUT/n3.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt O | tee -a "$LOG"
log "tests O (CUDA), gated_residual and adaln, LTX_GATED_RESIDUAL_FLAT_THREADS=128"
timeout -s INT 90 python3 -m pytest -q -p no:cacheprovider \
  -n 14 -rf -k "cuda and (gated_residual or adaln)" tests > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -20 | tee -a "$LOG"
for r in 1 0 1; do
  log "LTX 2B eager + kernels, LTX_GPU_MONITOR_REASONS=$r"
  LTX_GPU_MONITOR_REASONS=$r PREBUILT=O PARTS=compare LTX_TAG=-reasons$r timeout 100 \
    bash tools/gpu_e2e.sh > /dev/null 2>&1
done
log "LLaMA 8B"
PREBUILT=O PARTS=llama LLAMA_ARGS="--rounds 3 --iterations 5" timeout ${N3_LLAMA_LIMIT:-240} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "llama rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|ms/forward|ms a forward|over the loop|against|  (eager|compile|kernels)|GPU state|round|ratio|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
