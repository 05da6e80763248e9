#!/usr/bin/env bash
# Run EE, device call 4, on F0 (HEAD's CUDA source), with the transformers this project pins:
# carry [".whl-h", ".prebuilt"], WHEELS=.whl-h, where .whl-h now holds transformers 5.22.2 too
# (calls 2 and 3 ran the H200's own transformers: no ltx rope kernel in the kernels
# configuration's profile, torch's rotate_half instead, 107-109 ms a forward).
#   1. LLaMA-8B prefill, every configuration, 3 alternating rounds;
#   2. the kernels configuration profiled (one forward): this package's rope in it.
# Files: $OUT/ee4.log, $OUT/ee4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ee4
use_prebuilt F0 | tee -a "$LOG"
python3 -c "import transformers, kernels; print('transformers', transformers.__version__, 'kernels', kernels.__version__)" 2>&1 | tail -1 | tee -a "$LOG"
llama_e2e 100
log "LLaMA-8B prefill: kernels, profiled"
timeout 60 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress --rounds 1 \
  --iterations 5 --no-reference --configs kernels --profile --json "$OUT/llama-prof.json" \
  > "$OUT/llama-prof.log" 2>&1
echo "rc $?" | tee -a "$LOG"
grep -vE "dirty git tree" "$OUT/llama-prof.log" | head -30 | tee -a "$LOG"
experiment_end
