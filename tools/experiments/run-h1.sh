#!/usr/bin/env bash
# Run H, device call 1: two kernel changes against the tree's kernels, ours only, bf16, every
# full-table shape of the ops they touch, then the CUDA tests of those op families on the
# build with both. No build on the device (tools/gpu_prebuilt.sh; carry [".whl", ".prebuilt"]):
#   A           the tree's kernels (run G's)
#   small_grid  small grids of the row kernels (RMSNorm, AdaLN) take LTX_SMALL_GRID_VEC vectors
#               per thread, up to LTX_SMALL_GRID_PER_SM blocks per SM of the default grid
#               (launch.cuh choose_row_launch); swept over both knobs on one build
#   heads       small_grid + the rope heads path (rope.cu rope_heads_kernel: cos / sin loaded
#               once per token for every head), with its knobs LTX_ROPE_HEADS_BATCH and
#               LTX_ROPE_HEADS_PER_THREAD; its first sweep with eager and compile beside it
# Log: $OUT/h1.log; CSVs: $OUT/h1-*.csv.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/h1.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln
ROPE=rope_qk,rope_qk_gqa
sweep() {  # name ops [impls]; the environment's knobs apply
  log "sweep $1: $2 (${3:-ltx}) $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout "${SWEEP_LIMIT:-150}" python3 benchmarks/sweep.py --impls "${3:-ltx}" --dtypes bf16 \
    --ops "$2" --out "/tmp/h1-$1" 2>&1 | tail -2 | tee -a "$LOG"
  cp "/tmp/h1-$1/sweep.csv" "$OUT/h1-$1.csv"
}
tests() {  # name pytest-arguments...
  local name=$1; shift
  log "tests $name: $*"
  timeout "${TEST_LIMIT:-240}" python3 -m pytest -q -p no:cacheprovider -n 14 "$@" 2>&1 \
    | grep -v "^SKIPPED" | tail -6 | tee -a "$LOG"
}
use_prebuilt A && sweep A "$NORM,$ROPE"
use_prebuilt heads && {
  sweep heads "$ROPE" ltx,eager,compile
  LTX_ROPE_HEADS_BATCH=1 sweep heads-hb1 "$ROPE"
  LTX_ROPE_HEADS_PER_THREAD=4 sweep heads-hpt4 "$ROPE"
  LTX_ROPE_HEADS_PER_THREAD=16 sweep heads-hpt16 "$ROPE"
}
use_prebuilt small_grid && for s in 1:2 2:2 1:8 2:8 1:32 1:1000000; do
  LTX_SMALL_GRID_VEC=${s%%:*} LTX_SMALL_GRID_PER_SM=${s##*:} sweep "sg-${s/:/-}" "$NORM"
done
use_prebuilt heads && tests heads -k cuda tests/test_rope.py tests/test_rms_norm.py \
  tests/test_adaln.py
use_prebuilt A && sweep A2 "$NORM,$ROPE"
for b in A2 heads heads-hb1 heads-hpt4 heads-hpt16 sg-1-2 sg-2-2 sg-1-8 sg-2-8 sg-1-32 \
    sg-1-1000000; do
  [[ -f $OUT/h1-$b.csv ]] || continue
  log "A -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$OUT/h1-A.csv" "$OUT/h1-$b.csv" | tee -a "$LOG"
done
