#!/usr/bin/env bash
# Run E, device call 1: run E's kernel changes (tools/experiments/run-e-kernels.patch, already
# in the tree) timed against the tree without them, with the CUDA tests of the op families they
# touch; then two variants on top, each timed against run E's kernels. Logs: $OUT/ab.log.
#   git add -N <new files>; git diff HEAD -- ltx_kernels_cuda build.toml \
#     > tools/experiments/run-e-kernels.patch          # before the call, on this machine
#   bash tools/experiments/run-e1.sh                   # on the GPU machine
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
OPS=adaln,adaln_per_token,gated_residual_adaln,rms_norm,fused_add_rms_norm,rope_qk
OPS=$OPS,rms_norm_rope,rms_norm_rope_qk,gelu_tanh,geglu,silu_and_mul
echo "== run E kernels against HEAD ($(date +%T))" | tee -a "$OUT/ab.log"
AB_REVERSE=1 AB_PATCH=tools/experiments/run-e-kernels.patch AB_OPS=$OPS \
  AB_SWEEP_ARGS="--quick --dtypes bf16,fp16" \
  AB_TESTS="tests/test_adaln.py tests/test_rms_norm.py tests/test_rope.py" \
  timeout 420 bash tools/gpu_ab.sh
# The call also ran a second variant, adaln_gated_chunkwise:gated_residual_adaln; that patch is
# now in the tree (run E kept the gated path's chunk-by-chunk order, PERFORMANCE.md change 15).
for v in rope_launch_bounds:rope_qk,rms_norm_rope; do
  name=${v%%:*}
  echo "== $name against run E ($(date +%T))" | tee -a "$OUT/ab.log"
  OUT=$OUT/$name AB_PATCH=tools/experiments/$name.patch AB_OPS=${v##*:} \
    AB_SWEEP_ARGS="--quick --dtypes bf16,fp16" timeout 150 bash tools/gpu_ab.sh
  cat "$OUT/$name/ab.log" >> "$OUT/ab.log"
  rm -rf "$OUT/$name"
done
