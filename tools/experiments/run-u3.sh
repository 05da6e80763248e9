#!/usr/bin/env bash
# Run U, device call 3, on U1 (the final source) (carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h), in order of priority (the session's last device time):
#   - LTX-Video 2B eager and kernels in one process without the GPU monitor
#     (LTX_GPU_MONITOR=0: no nvidia-smi sampling beside the host-bound steps; tools/host_profile.py,
#     which has none, timed the kernels configuration at 42.82 ms a step one by one in calls 1
#     and 2 where benchmark_example, with it, gave 49.00)
#   - kernels alone with the monitor (as every earlier run)
#   - compile and kernels + compile at their fastest settings (tools/gpu_e2e.sh part best)
# Files: $OUT/u3.log (summary), $OUT/u3-*.json, $OUT/e2e.{log,json}.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start u3
use_prebuilt U1 | tee -a "$LOG"
LTX=(--num-frames 49 --height 512 --width 768 --batch-size 1 --cfg --steps 10
     --warmup-iterations 2 --no-progress)
ltx() {  # name, env / arguments...
  local name=$1; shift
  log "LTX 2B $name"
  timeout 90 env "$@" --json "$OUT/u3-$name.json" 2>&1 \
    | grep -E "ms/step|over the loop|GPU state|speedup|  (eager|kernels) " | tee -a "$LOG"
}
ltx compare-nomon LTX_GPU_MONITOR=0 python3 scripts/benchmark_example.py "${LTX[@]}" --compare
ltx kernels-mon LTX_GPU_MONITOR=1 python3 scripts/benchmark_example.py "${LTX[@]}"
ltx kernels-nomon LTX_GPU_MONITOR=0 python3 scripts/benchmark_example.py "${LTX[@]}"
log "LTX 2B compile and kernels + compile, fastest settings (U1)"
e2e_best U1 230
log done
