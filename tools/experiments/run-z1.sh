#!/usr/bin/env bash
# Run Z, device call 1, on Y0 (d41500b's CUDA library: HEAD's CUDA source is unchanged since;
# carry [".whl-h", ".prebuilt"], WHEELS=.whl-h) with the tree's Python. In order, each later
# step only while the call has time for it:
#   - LTX 2B, 49 frames 768x512, batch 1 x2 (CFG), bf16, each call one CUDA graph replay,
#     --freeze, --gelu-in-matmul: eager, compile, kernels, kernels + compile in one process
#     (issue 5: every configuration from one run, on this lease)
#   - LLaMA-8B prefill, 4096 tokens: eager, kernels, compile, kernels + compile, 3 rounds
#   - the full sweep in bf16 (every op, every shape, every peer), 3 rounds in alternating order,
#     the SM clock recorded while each implementation is timed (--monitor): issue 4's table from
#     one run instead of rows merged from runs Q-X; partial results survive the call's limit
#     and call 2 carries on with the ops it did not reach
# At most 8 files come back: $OUT/z1.log (summary), $OUT/z1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start z1
use_prebuilt Y0 | tee -a "$LOG"
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul"
export LTX_E2E_KERNELS="Memset|memsets|rms_norm_dense|gated_residual_flat|adaln_dense|rms_norm_rope_dense"
ltx_e2e ltx-all 300 --all-configs
if fits 80; then
  log "LLaMA-8B prefill: every configuration"
  timeout 80 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds 3 --iterations 5 --no-reference --configs eager,kernels,compile,kernels+compile \
    --json "$OUT/llama.json" > "$OUT/llama.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "round [0-9]/|ms \(median|against|per round|^    (eager|compile|kernels)" "$OUT/llama.log" \
    | head -40 | tee -a "$LOG"
fi
left=$(time_left)
if (( left > 60 )); then
  log "full sweep, bf16, every op and peer, 3 rounds, --monitor ($left s)"
  timeout "$left" python3 benchmarks/sweep.py --dtypes bf16 --rounds 3 --monitor \
    --out "$W/full-bf16" > "$OUT/sweep-bf16.log" 2>&1
  echo "rc $? ($(grep -c '^\[' "$OUT/sweep-bf16.log") cases)" | tee -a "$LOG"
  tail -2 "$OUT/sweep-bf16.log" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/z1-sweeps.tar.gz" full-bf16
fi
experiment_end
