#!/usr/bin/env bash
# Run N, device call 4, on O (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): LTX-Video 2B at
# the fastest settings (part best) with --skip-module-guards (no dynamo guards on the modules'
# attributes: the ~1.8 ms the host spends before each step's CUDA graph is mostly guards and
# the graph's input checks, if this takes it down): kernels + compile, then compile; then
# kernels + compile without it, for the host's breakdown of that gap (new in the timeline).
# Each one step profiled and 3 steps of the loop profiled.
# Files: $OUT/n4.log (summary), $OUT/e2e.log, $OUT/e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
export LTX_GATED_RESIDUAL_FLAT_THREADS=128  # the committed default (O was built with 256)
LOG=$OUT/n4.log
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
end=$((SECONDS + ${N4_LIMIT:-400}))
for spec in "use-optimized-kernels:-skip:--skip-module-guards" \
            "no-use-optimized-kernels:-skip:--skip-module-guards" "use-optimized-kernels::"; do
  IFS=: read -r kernels tag extra <<< "$spec"
  left=$((end - SECONDS)); (( left > 60 )) || break
  PREBUILT=O PARTS=best COMPILED_KERNELS=$kernels BEST_TAG=$tag \
    LTX_ARGS="--profile-loop 3 $extra" timeout $left bash tools/gpu_e2e.sh > /dev/null 2>&1
  echo "best $kernels $tag rc $?" | tee -a "$LOG"
done
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|host-bound idle|gap |the host during|^        [ 0-9.]+ ms  |TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
