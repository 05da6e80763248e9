#!/usr/bin/env bash
# Run X, device call 3, on X2 (6057447: the norm + rope dense kernel's weights loaded after
# the reduction only for pair tables and one tensor; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h) with the tree's Python (03af913: LTX's per-sample gated residual as
# gated_residual under torch.compile too), in order of priority, each later step only while
# the call has time for it:
#   - the norm + rope ops, ours alone: the default choice against early (=0) and late (=1)
#     weights everywhere, two rounds alternating, bf16
#   - LTX 2B, eager and kernels + compile, each call one CUDA graph replay, profiled; then
#     compile alone the same way (the same lease's baseline)
#   - the norm + rope CUDA tests at the defaults; the LTX integration tests on CUDA
#   - the two norm + rope ops whose kernel changed (pair tables, one tensor: late weights)
#     against every peer, bf16 (then fp16 after the compile-alone LTX run), 3 rounds (the
#     table's rows; call 2's 60 s sweep of all four did not reach the pair tables)
#   - the knob tests of both weight-load paths for every operand kind
#   - compute-sanitizer racecheck over the rope family (call 2's 45 s were too few)
#   - RMSNorm against every peer, 3 rounds (call 2: level with Liger and compile when only the
#     three were timed, behind in the table's sweep of every peer), and ours / Liger / compile
#     with the L2 flushed by a read
#   - the activation knob tests run W left (act-row-kernel, act-flat-gated)
# At most 8 files come back: $OUT/x3.log (summary), $OUT/x3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
CALL_BUDGET=530  # the session's device time left after a refused start
experiment_start x3
use_prebuilt X2 | tee -a "$LOG"
NR=rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared,rms_norm_rope_qk_pairs
log "norm + rope, ours alone: the default choice against early and late weights everywhere"
AB_DTYPES=bf16 AB_SWEEP_LIMIT=40 knob_ab "$NR" "$W/late" "auto=" \
  "early=LTX_NORM_ROPE_DENSE_LATE=0" "late=LTX_NORM_ROPE_DENSE_LATE=1" | tee -a "$LOG"
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul"
export LTX_E2E_KERNELS="rms_norm_rope_dense|gated_residual_flat|add_addcmul"
fits 110 && ltx_e2e ltx-kc 120 --compile --compare
fits 90 && run_tests tests-normrope 90 -n 16 -k "cuda and rms_norm_rope and not huge" \
  tests/test_rope.py
fits 80 && run_tests tests-integ 80 -n 8 -k "cuda and ltx" tests/test_integrations.py
if fits 60; then
  PEER_ARGS="--rounds 3" peer_sweeps rms_norm_rope_qk_pairs,rms_norm_rope "$W/nr" 55 bf16
  tar -C "$W" -czf "$OUT/x3-sweeps.tar.gz" .
fi
fits 110 && ltx_e2e ltx-compile 120 --compile --no-use-optimized-kernels
if fits 60; then
  PEER_ARGS="--rounds 3" peer_sweeps rms_norm_rope_qk_pairs,rms_norm_rope "$W/nr" 55 fp16
  tar -C "$W" -czf "$OUT/x3-sweeps.tar.gz" .
fi
export LTX_KNOB_TEST_WORKERS=16
fits 170 && run_tests tests-knob-nr 170 -k "norm-rope-dense" tests/test_stage_knobs.py
fits 100 && sanitize rope 100 rope
RMS_SHAPES=1x1024x2048,1x1024x4096,2x1024x2048,4x1024x2048,2x2688x2048
if fits 50; then
  PEER_ARGS="--rounds 3 --shapes $RMS_SHAPES" peer_sweeps rms_norm "$W/rms" 50 bf16
fi
if fits 40; then
  log "rms_norm: ours, Liger, compile; L2 flushed by a read"
  timeout 40 python3 benchmarks/sweep.py --ops rms_norm --dtypes bf16 --rounds 3 \
    --shapes "$RMS_SHAPES" --impls ltx,liger,compile --flush read --out "$W/flush-read" 2>&1 | tail -1
  grep -E "^\| rms_norm \|" "$W/flush-read/sweep.md" | tee -a "$LOG"
fi
tar -C "$W" -czf "$OUT/x3-sweeps.tar.gz" .
fits 150 && run_tests tests-knob-act 150 -k "act-row-kernel or act-flat-gated" \
  tests/test_stage_knobs.py
experiment_end
