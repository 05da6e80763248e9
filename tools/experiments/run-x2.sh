#!/usr/bin/env bash
# Run X, device call 2, on X1 (7e2bd4e: the norm + rope dense kernel with its weights loaded
# after the reduction, 40 registers; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h), in order
# of priority, each later step only while the call has time for it (the lease's limit is 600 s
# and a cut call brings back only what it packed):
#   - the norm + rope ops, ours alone: the new default (late weights) against
#     LTX_NORM_ROPE_DENSE_LATE=0 (run W's kernel), two rounds alternating, bf16
#   - LTX 2B with each call one CUDA graph replay (--cuda-graph), all four configurations,
#     profiled: a second lease for call 1's numbers, with the new norm + rope kernel
#   - the norm + rope CUDA tests, the knob test of the early-weights path; compute-sanitizer
#     memcheck and racecheck over the rope family (the norm + rope ops among them)
#   - the norm + rope ops against every peer (bf16, 3 rounds), for the table
#   - LLaMA-8B prefill: compile and kernels + compile, one more process
#   - RMSNorm ours / Liger / compile with the L2 flushed by zeroing and by reading (the
#     table's gap at 8-44 MB that isolated launches do not show)
#   - the activation knob tests run W left (act-row-kernel, act-flat-gated)
# At most 8 files come back: $OUT/x2.log (summary), $OUT/x2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start x2
use_prebuilt X1 | tee -a "$LOG"
NR=rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared,rms_norm_rope_qk_pairs
log "norm + rope, ours alone: late weights (default) against early (LTX_NORM_ROPE_DENSE_LATE=0)"
AB_DTYPES=bf16 AB_SWEEP_LIMIT=40 knob_ab "$NR" "$W/late" "late=" \
  "early=LTX_NORM_ROPE_DENSE_LATE=0" | tee -a "$LOG"
fits 170 && LTX_E2E_KERNELS=rms_norm_rope_dense ltx_e2e ltx-graph 200 --all-configs \
  --cuda-graph --freeze --gelu-in-matmul
if fits 60; then
  log "norm + rope CUDA tests (X1)"
  run_tests tests-normrope 60 -n 16 -k "cuda and rms_norm_rope and not huge" tests/test_rope.py
fi
fits 60 && run_tests tests-knob-nr 60 -k "norm-rope-dense-early" tests/test_stage_knobs.py
fits 100 && sanitize rope 45 rope
if fits 60; then
  PEER_ARGS="--rounds 3" peer_sweeps "$NR" "$W/peers" 60 bf16
  tar -C "$W" -czf "$OUT/x2-sweeps.tar.gz" .
fi
if fits 60; then
  log "LLaMA-8B prefill (X1): compile, kernels+compile"
  timeout 90 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds 3 --iterations 5 --no-reference --configs compile,kernels+compile \
    --json "$OUT/llama.json" > "$OUT/llama.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "round [0-9]/|ms \(median|against|per round|^    (compile|kernels)" "$OUT/llama.log" \
    | head -30 | tee -a "$LOG"
fi
for flush in zero read; do
  fits 45 || break
  log "rms_norm: ours, Liger, compile; L2 flushed by $flush"
  timeout 45 python3 benchmarks/sweep.py --ops rms_norm --dtypes bf16 --rounds 3 \
    --shapes 1x1024x2048,1x1024x4096,2x1024x2048,4x1024x2048,2x2688x2048 \
    --impls ltx,liger,compile --flush "$flush" --out "$W/flush-$flush" 2>&1 | tail -1
  grep -E "^\| rms_norm \|" "$W/flush-$flush/sweep.md" | tee -a "$LOG"
done
[[ -d $W/flush-zero ]] && tar -C "$W" -czf "$OUT/x2-sweeps.tar.gz" .
fits 150 && run_tests tests-knob-act 150 -k "act-row-kernel or act-flat-gated" \
  tests/test_stage_knobs.py
experiment_end
