#!/usr/bin/env bash
# Run K, device call 2, on F: call 1's choices as defaults (RMSNorm staged in groups of up to
# 128 threads, fused_add_rms_norm staged up to D = 4096 in 16 bits, the gated AdaLN staged
# beyond one wave with x and y staged and its sum in batches; the static shared memory now
# counted in the 48 KB, which call 1's knob tests found missing). Carry [".whl-h",
# ".prebuilt"], WHEELS=.whl-h; D = run J's shipped kernels.
#   - F's CUDA tests of rms_norm / adaln (defaults), then tests/test_stage_knobs.py
#   - compute-sanitizer memcheck / racecheck: every shape staged in groups of up to 256, and
#     the gated kernel with y read
#   - our kernels alone (bf16, the five row ops' full-table shapes): D, F, F under the knobs
#     left open (RMSNorm one warp a row; AdaLN / gated in 2 warps; gated with y read), D again
# Few files come back: $OUT/k2.log and $OUT/k2.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/k2.log
W=/tmp/k2
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,adaln_per_token,gated_residual_adaln
ADALN=adaln,adaln_per_token,gated_residual_adaln
sweep() {  # name ops [sweep arguments]; the environment's knobs apply
  local name=$1 ops=$2; shift 2
  log "sweep $name: $ops $* $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 120 python3 benchmarks/sweep.py --dtypes bf16 --ops "$ops" --out "$W/$name" "$@" \
    2>&1 | tail -1 | tee -a "$LOG"
  tar -C $W -czf "$OUT/k2.tar.gz" .
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
use_prebuilt D && sweep D "$NORM" --impls ltx
use_prebuilt F || exit 1
sweep F "$NORM" --impls ltx
( export LTX_STAGE_MAX_GROUP=32; sweep F-rms-g32 rms_norm,fused_add_rms_norm --impls ltx )
( export LTX_ADALN_STAGE_MAX_GROUP=64 LTX_GATED_STAGE_MAX_GROUP=64; sweep F-adaln-g64 "$ADALN" --impls ltx )
( export LTX_GATED_STAGE_Y=0; sweep F-gated-y0 gated_residual_adaln --impls ltx )
( export LTX_GATED_STAGE_Y=0 LTX_GATED_STAGE_MAX_GROUP=64; sweep F-gated-y0-g64 gated_residual_adaln --impls ltx )
log "tests F (defaults): rms_norm, adaln"
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 -k cuda tests/test_rms_norm.py \
  tests/test_adaln.py 2>&1 | grep -v "^SKIPPED" | tail -4 | tee -a "$LOG"
log "tests F: knob settings (tests/test_stage_knobs.py)"
LTX_KNOB_TEST_WORKERS=4 timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/test_stage_knobs.py 2>&1 | grep -v "^SKIPPED" | tail -30 | tee -a "$LOG"
EVERY="LTX_STAGE=1 LTX_ADALN_STAGE=1 LTX_GATED_STAGE=1 LTX_STAGE_MAX_VEC=1000000"
EVERY+=" LTX_ADALN_STAGE_MAX_VEC=1000000 LTX_GATED_STAGE_MAX_VEC=1000000"
GROUPS256="LTX_STAGE_MAX_GROUP=256 LTX_ADALN_STAGE_MAX_GROUP=256 LTX_GATED_STAGE_MAX_GROUP=256"
for tool in memcheck racecheck; do
  log "sanitize $tool: rms_norm adaln, every shape staged, groups of up to 256"
  ( export $EVERY $GROUPS256 LTX_STAGE_VEC=1; timeout 80 compute-sanitizer --tool $tool \
    --error-exitcode 9 python3 tools/sanitize_ops.py rms_norm adaln 2>&1 | tail -2 \
    | tee -a "$LOG" )
  log "sanitize $tool: adaln, every shape staged, y read"
  ( export $EVERY LTX_GATED_STAGE_Y=0; timeout 60 compute-sanitizer --tool $tool \
    --error-exitcode 9 python3 tools/sanitize_ops.py adaln 2>&1 | tail -2 | tee -a "$LOG" )
done
use_prebuilt D && sweep D2 "$NORM" --impls ltx
for b in D2 F F-rms-g32 F-adaln-g64 F-gated-y0 F-gated-y0-g64; do
  log "D -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$W/D/sweep.csv" "$W/$b/sweep.csv" | tee -a "$LOG"
done
tar -C $W -czf "$OUT/k2.tar.gz" .
log done
