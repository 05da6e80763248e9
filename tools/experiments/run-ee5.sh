#!/usr/bin/env bash
# Run EE, device call 5, on F0 (HEAD's CUDA source) with the pinned transformers (carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h, from tools/device_wheels.sh), the session's last
# device time: LLaMA-8B prefill, every configuration, in two more processes (call 4 had
# kernels + compile at 1.004x compile, rounds 1.002-1.007x: within a process's spread).
# Files: $OUT/ee5.log, $OUT/ee5-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
CALL_BUDGET=${CALL_BUDGET:-180}
experiment_start ee5
use_prebuilt F0 | tee -a "$LOG"
for i in 1 2; do
  fits 60 || break
  llama_e2e 70
  mv "$OUT/llama.log" "$OUT/llama-$i.log"
  mv "$OUT/llama.json" "$OUT/llama-$i.json"
done
experiment_end
