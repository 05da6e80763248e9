#!/usr/bin/env bash
# Run DD, device call 2, on Y0 (HEAD's CUDA source; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h):
#   1. issue 4's full table in fp16, 3 rounds in shuffled order, --monitor (call 1 did bf16);
#   2. while the call has time: LTX 2B at issue 5's setting, torch.compile alone and kernels +
#      compile, one process each, cuBLASLt's workspace at 0 as in run AA (no profile: the
#      times only, beside each other on this lease).
# Files: $OUT/dd2.log, $OUT/dd2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start dd2
use_prebuilt Y0 | tee -a "$LOG"

log "full sweep, fp16, every op and peer, 3 rounds in shuffled order, --monitor"
timeout 390 python3 benchmarks/sweep.py --dtypes fp16 --rounds 3 --order shuffle --monitor \
  --out "$W/full-fp16" > "$OUT/sweep-fp16.log" 2>&1
echo "rc $? ($(grep -c '^\[' "$OUT/sweep-fp16.log") cases)" | tee -a "$LOG"
python3 tools/targets.py "$W/full-fp16/sweep.csv" | tee -a "$LOG"
tar -C "$W" -czf "$OUT/sweeps.tar.gz" full-fp16

for cfg in compile kernels+compile; do
  fits 75 || break
  flags="--compile"
  # call 2 ran "--no-optimized-kernels", which is not a flag (rc 2): compile did not run there
  [[ $cfg == compile ]] && flags="--compile --no-use-optimized-kernels"
  log "LTX 2B: $cfg"
  left=$(( ${CALL_BUDGET:-560} - ($(date +%s) - CALL_T0) - 5 ))
  timeout "$left" python3 scripts/benchmark_example.py --num-frames 49 --height 512 --width 768 \
    --batch-size 1 --cfg --steps 10 --warmup-iterations 2 --no-progress --cuda-graph --freeze \
    --gelu-in-matmul --cublaslt-workspace-kib 0 $flags --json "$OUT/ltx-$cfg.json" \
    > "$OUT/ltx-$cfg.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "ms/step|over the loop|GPU state|Error|error" "$OUT/ltx-$cfg.log" | tee -a "$LOG"
done
experiment_end
