#!/usr/bin/env bash
# Run W, device call 2, on W1 (d4d6970: gated_residual's flat kernel with a RunBcast gate;
# fuse_decoder_residuals, Python; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h), in order of
# priority:
#   - LLaMA-8B-sized prefill, 4096 tokens: eager, compile, kernels, kernels+compile (now with
#     the residual adds fused across layers) and kernels+compile-unfused (run V's
#     configuration), 3 alternating rounds of 5, profiled
#   - gated_residual ours with the RunBcast gate against the FastBcast gate (knob
#     LTX_GATED_RESIDUAL_RUN_GATE=0, run V's code path), two rounds alternating; then ours and
#     every peer, bf16 and fp16 (the table's rows)
#   - CUDA tests: gated_residual (gate forms included) at the defaults and under the knob; the
#     model tests of fuse_decoder_residuals; the transformers benchmark's script tests
# At most 8 files come back: $OUT/w2.log (summary), $OUT/w2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start w2
use_prebuilt W1 | tee -a "$LOG"
log "LLaMA-8B prefill (W1): five configurations, 3 alternating rounds"
timeout 240 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress --profile \
  --rounds 3 --iterations 5 \
  --configs eager,compile,kernels,kernels+compile,kernels+compile-unfused \
  --json "$OUT/llama8b.json" > "$OUT/llama8b.log" 2>&1
echo "rc $?" | tee -a "$LOG"
grep -E "round [0-9]/|ms \(median|against|per round|relative L2|^    (eager|compile|kernels)|total [0-9.]+ ms|    ours |gated_residual_adaln|triton_poi_fused__unsafe_view_add|triton_red_fused|Error|error" \
  "$OUT/llama8b.log" | head -80 | tee -a "$LOG"
log "gated_residual: RunBcast gate against FastBcast (W1, ours alone)"
AB_SWEEP_LIMIT=40 knob_ab gated_residual "$W/gate" "run=" \
  "fastb=LTX_GATED_RESIDUAL_RUN_GATE=0" | tee -a "$LOG"
PEER_ARGS="--rounds 3" peer_sweeps gated_residual "$W" 90 bf16 fp16
tar -C "$W" -czf "$OUT/w2-sweeps.tar.gz" .
log "CUDA tests (W1)"
run_tests tests-gated 120 -n 16 -k "cuda and gated_residual and not gated_residual_adaln" \
  tests/test_adaln.py
run_tests tests-knob 150 -k "gated-residual-fast-bcast" tests/test_stage_knobs.py
run_tests tests-models 200 -n 8 -k "cuda and (fuse or kernelize)" tests/test_models.py
run_tests tests-scripts 200 -n 4 -k "cuda and benchmark_transformers" tests/test_scripts.py
experiment_end
