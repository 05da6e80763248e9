#!/usr/bin/env bash
# Run J, device call 2 (after the debugging calls, which found that the staged launchers asked
# StageSlot::staged(), then __device__ only, from host code: nvcc compiles such a call to
# exit(1) on the host). Extensions built here for sm_90 without PTX (carry [".whl-h",
# ".prebuilt"], WHEELS=.whl-h): A = 92f6912's kernels, C = the staged row kernels with the
# fix and run J's defaults (LTX_STAGE / LTX_ADALN_STAGE 2: beyond one wave; *_MAX_VEC 384).
#   - C's CUDA tests of rms_norm / adaln, compute-sanitizer memcheck + racecheck over them
#   - ours alone (bf16, every full-table shape of the five row ops): A, C, C with the staged
#     path at every row length (*_MAX_VEC), C in one-wave grids too (mode 1)
#   - C against every peer, bf16 (the table)
# Few files come back: $OUT/j2.log and $OUT/j2.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/j2.log
W=/tmp/j2
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,adaln_per_token,gated_residual_adaln
sweep() {  # name ops [sweep arguments]; the environment's knobs apply
  local name=$1 ops=$2; shift 2
  log "sweep $name: $ops $* $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 170 python3 benchmarks/sweep.py --dtypes bf16 --ops "$ops" --out "$W/$name" "$@" \
    2>&1 | tail -1 | tee -a "$LOG"
  tar -C $W -czf "$OUT/j2.tar.gz" .
}
use_prebuilt C || exit 1
log "tests C: rms_norm, adaln"
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 -k cuda tests/test_rms_norm.py \
  tests/test_adaln.py 2>&1 | grep -v "^SKIPPED" | tail -5 | tee -a "$LOG"
for tool in memcheck racecheck; do
  log "sanitize $tool: rms_norm adaln"
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 tools/sanitize_ops.py rms_norm adaln 2>&1 | tail -2 | tee -a "$LOG"
done
sweep C "$NORM" --impls ltx
LTX_STAGE_MAX_VEC=100000 LTX_ADALN_STAGE_MAX_VEC=100000 sweep C-maxvec "$NORM" --impls ltx
LTX_STAGE=1 LTX_ADALN_STAGE=1 sweep C-mode1 "$NORM" --impls ltx
use_prebuilt A && sweep A "$NORM" --impls ltx
use_prebuilt C && sweep C-peers "$NORM"
for b in C C-maxvec C-mode1; do
  log "A -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$W/A/sweep.csv" "$W/$b/sweep.csv" | tee -a "$LOG"
done
cat "$W/C-peers/sweep.md" >> "$LOG"
tar -C $W -czf "$OUT/j2.tar.gz" .
log done
