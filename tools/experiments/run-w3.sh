#!/usr/bin/env bash
# Run W, device call 3, on W3 (silu_mul and the gated_residual FastBcast fix; carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h), in order of priority (the session's last device
# time):
#   - LLaMA-8B prefill, 4096 tokens: eager, compile, kernels, kernels+compile (residual adds
#     fused across layers and the MLP's silu_mul) and kernels+compile-unfused (run V's
#     configuration), 3 alternating rounds of 5, profiled; then the three compiled ones again
#     in a second process (inductor picks its kernels' configurations anew: call 2's silu * up
#     took 2.55 or 3.75 ms a forward between configurations)
#   - silu_mul: ours and every peer, bf16 (the LLaMA MLP's shapes)
#   - CUDA tests: the activations (activation.cu changed), the model tests of both fusions,
#     gated_residual's tests, its knob test, and the knob A/B of its gate offset; memcheck of
#     the activation family (silu_mul included)
# At most 8 files come back: $OUT/w3.log (summary), $OUT/w3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start w3
use_prebuilt W3 | tee -a "$LOG"
llama() {  # name, arguments
  local name=$1; shift
  log "LLaMA-8B prefill (W3): $name"
  timeout 150 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds 3 --iterations 5 --json "$OUT/$name.json" "$@" > "$OUT/$name.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "round [0-9]/|ms \(median|against|per round|relative L2|^    (eager|compile|kernels)|total [0-9.]+ ms|    ours |adaln_dense|activation_flat|silu|triton_poi_fused__unsafe_view_add|triton_red_fused|Error|error" \
    "$OUT/$name.log" | head -70 | tee -a "$LOG"
}
llama llama-a --profile --configs eager,compile,kernels,kernels+compile,kernels+compile-unfused
llama llama-b --no-reference --configs compile,kernels+compile,kernels+compile-unfused
PEER_ARGS="--rounds 3" peer_sweeps silu_mul "$W" 80 bf16
log "CUDA tests (W3)"
run_tests tests-act 150 -n 16 -k "cuda" tests/test_activation.py
run_tests tests-models 150 -n 8 -k "cuda and fuse" tests/test_models.py
run_tests tests-gated 60 -n 16 -k "cuda and gated_residual and not gated_residual_adaln" \
  tests/test_adaln.py
run_tests tests-knob 80 -k "gated-residual-fast-bcast" tests/test_stage_knobs.py
log "gated_residual: RunBcast gate against FastBcast (W3, ours alone, bf16)"
AB_DTYPES=bf16 AB_SWEEP_LIMIT=30 knob_ab gated_residual "$W/gate" "run=" \
  "fastb=LTX_GATED_RESIDUAL_RUN_GATE=0" | tee -a "$LOG"
tar -C "$W" -czf "$OUT/w3-sweeps.tar.gz" .
SANITIZE_TOOLS=memcheck sanitize activation 90 activation
experiment_end
