#!/usr/bin/env bash
# Run Y, device call 1, on Y0 (d41500b's CUDA library, run X's final source; carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h) with the tree's Python: each LTX block's modulation
# (`scale_shift_table + temb`) passed as an as_strided view, so that inductor computes it into
# one buffer a block instead of one for each shift / scale / gate; the profiles now count the
# device events and say what each memset follows. In order of priority, each later step only
# while the call has time for it:
#   - LTX 2B, 49 frames 768x512, batch 1 x2 (CFG), bf16, each call one CUDA graph replay,
#     --freeze, --gelu-in-matmul: eager, compile, kernels, kernels + compile in one process
#     (issue 5: every configuration from one run); then kernels + compile without the view
#     (the line deleted from the build's copy) and with it again (the view's effect on one
#     lease, and a second k + c measurement)
#   - the LTX integration tests on CUDA (with the new modulation test)
#   - LLaMA-8B prefill, 4096 tokens: eager, kernels, compile, kernels + compile, 3 rounds
#   - RMSNorm against every peer and against Liger and compile only, 3 rounds each, on one
#     lease (run U's table and run X's 3-implementation sweep disagree on ours by ~10%)
#   - compute-sanitizer racecheck over the rope family (run X's 45 s were too few)
# At most 8 files come back: $OUT/y1.log (summary), $OUT/y1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start y1
use_prebuilt Y0 | tee -a "$LOG"
DIFFUSERS_PY=build/$PREBUILT_VARIANT/integrations/diffusers.py
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul"
export LTX_E2E_KERNELS="triton_|Memset|memsets|  +[0-9]+  |rms_norm_dense|gated_residual_flat"
ltx_e2e ltx-all 340 --all-configs
if fits 100; then
  sed -i '/ada_values = ada_values.as_strided/d' "$DIFFUSERS_PY"
  grep -c "ada_values.as_strided" "$DIFFUSERS_PY" | sed 's/^/as_strided lines left: /' | tee -a "$LOG"
  ltx_e2e ltx-kc-noview 110 --compile
  cp torch-ext/ltx_kernels/integrations/diffusers.py "$DIFFUSERS_PY"
fi
fits 60 && run_tests tests-integ 60 -n 8 -k "cuda and ltx" tests/test_integrations.py
if fits 120; then
  log "LLaMA-8B prefill: every configuration"
  timeout 120 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds 3 --iterations 5 --no-reference --configs eager,kernels,compile,kernels+compile \
    --json "$OUT/llama.json" > "$OUT/llama.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "round [0-9]/|ms \(median|against|per round|^    (eager|compile|kernels)" "$OUT/llama.log" \
    | head -40 | tee -a "$LOG"
fi
fits 100 && ltx_e2e ltx-kc 110 --compile
RMS_SHAPES=1x1024x2048,1x1024x4096,2x1024x2048,4x1024x2048,2x2688x2048,1x4096x4096
if fits 50; then
  log "rms_norm: every peer"
  PEER_ARGS="--rounds 3 --shapes $RMS_SHAPES" peer_sweeps rms_norm "$W/rms" 45 bf16
fi
if fits 35; then
  log "rms_norm: ours, Liger, compile"
  timeout 35 python3 benchmarks/sweep.py --ops rms_norm --dtypes bf16 --rounds 3 \
    --shapes "$RMS_SHAPES" --impls ltx,liger,compile --out "$W/rms3" 2>&1 | tail -1
  grep -E "^\| rms_norm \|" "$W/rms3/sweep.md" | tee -a "$LOG"
fi
tar -C "$W" -czf "$OUT/y1-sweeps.tar.gz" .
fits 100 && SANITIZE_TOOLS=racecheck sanitize rope 90 rope
experiment_end
