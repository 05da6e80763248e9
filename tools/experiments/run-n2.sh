#!/usr/bin/env bash
# Run N, device call 2, on O (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - LTX-Video 2B, kernels + compile at its fastest settings (part best; call 1's limit cut
#     it), then the four configurations in one process (part ltx); each with one step
#     profiled, 3 steps of the loop profiled and the sync-debug step (LTX_ARGS)
# Files: $OUT/n2.log (summary), $OUT/e2e.log, $OUT/e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
LOG=$OUT/n2.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
PREBUILT=O PARTS="best ltx" COMPILED_KERNELS=use-optimized-kernels \
  LTX_ARGS="--profile-loop 3 --sync-debug" timeout ${N2_LIMIT:-560} bash tools/gpu_e2e.sh \
  > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|ms/forward|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|sync debug|host-bound|round|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
