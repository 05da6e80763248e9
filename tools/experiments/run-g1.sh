#!/usr/bin/env bash
# Run G, device call 1: three experiments (preload_one_wave.patch, rope_split_half_width.patch,
# gated_store_late.patch) against the tree's kernels, ours only, bf16, every shape of the
# full table for the ops they touch, and each experiment's op-family CUDA tests; the tree's
# kernels timed again at the end for the spread. No build on the device: all four extensions
# were built on the development machine (sm_90, no PTX; tools/gpu_prebuilt.sh) and travel in
# .prebuilt/ (carry [".whl-min", ".prebuilt"]). Log: $OUT/g1.log; CSVs: $OUT/g1-*.csv.
set -uo pipefail
cd "$(dirname "$0")/../.."
export WHEELS=${WHEELS:-.whl-min}  # kernels, tomlkit, diffusers, importlib_metadata: no peers
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/g1.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln
sweep() {  # name ops
  log "sweep $1: $2"
  timeout "${SWEEP_LIMIT:-150}" python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops "$2" \
    --out "/tmp/g1-$1" 2>&1 | tail -2 | tee -a "$LOG"
  cp "/tmp/g1-$1/sweep.csv" "$OUT/g1-$1.csv"
}
tests() {  # name pytest-arguments...
  local name=$1; shift
  log "tests $name: $*"
  timeout "${TEST_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider -n 12 "$@" 2>&1 \
    | grep -v "^SKIPPED" | tail -4 | tee -a "$LOG"
}
use_prebuilt A && sweep A "$NORM,rope_qk" \
  && tests A -k "cuda and default_out_layout" tests/test_rope.py
use_prebuilt preload_one_wave && sweep preload "$NORM" \
  && tests preload -k cuda tests/test_rms_norm.py tests/test_adaln.py
use_prebuilt rope_split_half_width && sweep rope rope_qk && tests rope -k cuda tests/test_rope.py
use_prebuilt gated_store_late && sweep gated gated_residual_adaln \
  && tests gated -k "cuda and gated" tests/test_adaln.py
use_prebuilt A && sweep A2 "rms_norm,fused_add_rms_norm,rope_qk"
for b in A2 preload rope gated; do
  log "A -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$OUT/g1-A.csv" "$OUT/g1-$b.csv" | tee -a "$LOG"
done
