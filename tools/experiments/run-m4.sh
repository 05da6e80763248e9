#!/usr/bin/env bash
# Run M, device call 4, on N: compile and kernels + compile (no --gelu-in-matmul), both with
# --freeze and CUDA graphs, each in its own process, timed step by step and over the loop,
# profiled (tools/gpu_e2e.sh part freeze, FREEZE_MODES=reduce-overhead); the counterparts of
# call 3's best configuration (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
LOG=$OUT/m4.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
PREBUILT=N PARTS=freeze FREEZE_MODES=reduce-overhead timeout ${M4_LIMIT:-330} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|host-bound|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
