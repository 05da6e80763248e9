#!/usr/bin/env bash
# Run M, device call 3, on N: LTX-Video 2B end to end (tools/gpu_e2e.sh parts ltx and gelu):
# the four configurations in one process, each timed step by step and over the loop (one
# synchronization around it), profiled; then kernels and kernels + compile with the
# feed-forward GELU in its projection's cuBLASLt epilogue (--gelu-in-matmul), and kernels +
# compile with it, --freeze and CUDA graphs (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h).
# Files: $OUT/e2e.log, $OUT/e2e.json, $OUT/m3.log (the summary lines).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
LOG=$OUT/m3.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
PREBUILT=N PARTS="ltx gelu" timeout ${M3_LIMIT:-540} bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|host-bound|device busy|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
