#!/usr/bin/env bash
# A/B of one source change in one device call (a GPU machine, from the repository root):
#   A  the tree as it is: build, time our kernels for $AB_OPS (benchmarks/sweep.py --impls ltx)
#   B  with $AB_PATCH applied (git apply): build, time the same, then run $AB_TESTS (the CUDA
#      tests of the touched op family) against B
# and the tree restored afterwards. Prints A, B and B/A per case to $OUT/ab.log and writes both
# sweeps under $OUT/ab-A, $OUT/ab-B. Both timings come from one process each on one lease; run
# A twice (AB_PATCH=/dev/null) to see the spread before trusting a small difference.
#
#   AB_PATCH=tools/experiments/activation_launch_bounds.patch AB_OPS=gelu_tanh,geglu,silu_and_mul \
#     AB_TESTS=tests/test_activation.py bash tools/gpu_ab.sh
#
# AB_SWEEP_ARGS (default "--quick --dtypes bf16,fp16") picks shapes and dtypes. AB_REVERSE=1:
# the tree as it is is B, and A is the tree with $AB_PATCH reversed (for a change already in the
# working tree: git diff HEAD > x.patch).
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_env.sh  # $OUT, the carried wheels, the build target
: "${AB_PATCH:?AB_PATCH: a patch file (git diff > x.patch)}" "${AB_OPS:?AB_OPS: sweep ops}"
LOG=$OUT/ab.log
build() { python3 tools/build.py --backends cuda,cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"; }
sweep() {
  echo "== $1: sweep $AB_OPS ($(date +%T))" | tee -a "$LOG"
  python3 benchmarks/sweep.py --impls ltx --ops "$AB_OPS" --out "$OUT/ab-$1" \
    ${AB_SWEEP_ARGS:---quick --dtypes bf16,fp16} 2>&1 | tail -3 | tee -a "$LOG"
}
reverse=${AB_REVERSE:-0}
if [[ $reverse == 1 ]]; then  # A: the tree without the change it holds
  git apply -R "$AB_PATCH" || { echo "== $AB_PATCH does not reverse" | tee -a "$LOG"; exit 1; }
  trap 'git apply "$AB_PATCH"' EXIT
fi
build || exit 1
sweep A
if [[ $reverse == 1 ]]; then  # B: the tree as it was
  git apply "$AB_PATCH" && trap - EXIT
elif [[ -s $AB_PATCH ]]; then  # B: the tree with the change, reversed on exit
  git apply "$AB_PATCH" || { echo "== $AB_PATCH does not apply" | tee -a "$LOG"; exit 1; }
  trap 'git apply -R "$AB_PATCH"' EXIT
fi
build || exit 1
sweep B
status=0
if [[ -n ${AB_TESTS:-} ]]; then
  echo "== B: tests $AB_TESTS ($(date +%T))" | tee -a "$LOG"
  python3 -m pytest -q -p no:cacheprovider -n 12 -k cuda $AB_TESTS 2>&1 | tail -4 | tee -a "$LOG"
  status=${PIPESTATUS[0]}
fi
python3 tools/ab_table.py "$OUT/ab-A/sweep.csv" "$OUT/ab-B/sweep.csv" | tee -a "$LOG"
exit $status
