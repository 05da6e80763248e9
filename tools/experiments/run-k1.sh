#!/usr/bin/env bash
# Run K, device call 1. Extensions built on the development machine for sm_90 without PTX
# (tools/gpu_prebuilt.sh; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   D: run J's shipped kernels (a33faeb's sm_90 code: da7b196 and a33faeb left the SASS as is);
#   E: the gated AdaLN staged with y read from global memory into the sum (LTX_GATED_STAGE_ROWS
#      [1]; 0: x read too, 2: run J's, both staged), and groups of several warps per row on the
#      staged path (LTX_STAGE_MAX_GROUP [32]: today's one warp), defaults otherwise as D.
# In one call: our kernels alone (bf16, every full-table shape of the five row ops) for D, E
# under each knob setting, and D again; E's CUDA tests of rms_norm / adaln under the knob
# settings of tests/test_stage_knobs.py (every shape staged, several warps a row, the gated
# rows modes; the defaults' register path is unchanged, call 2 runs their tests);
# compute-sanitizer memcheck / racecheck over the new paths; the gated op against every peer.
# Few files come back: $OUT/k1.log and $OUT/k1.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/k1.log
W=/tmp/k1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,adaln_per_token,gated_residual_adaln
LIFT="LTX_STAGE_MAX_VEC=1000000 LTX_ADALN_STAGE_MAX_VEC=1000000 LTX_GATED_STAGE_MAX_VEC=1000000"
sweep() {  # name ops [sweep arguments]; the environment's knobs apply
  local name=$1 ops=$2; shift 2
  log "sweep $name: $ops $* $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 150 python3 benchmarks/sweep.py --dtypes bf16 --ops "$ops" --out "$W/$name" "$@" \
    2>&1 | tail -1 | tee -a "$LOG"
  tar -C $W -czf "$OUT/k1.tar.gz" .
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
use_prebuilt D && sweep D "$NORM" --impls ltx
use_prebuilt E || exit 1
sweep E "$NORM" --impls ltx
G="LTX_GATED_STAGE=2"
( export $G LTX_GATED_STAGE_ROWS=1; sweep E-g1 gated_residual_adaln --impls ltx )
( export $G LTX_GATED_STAGE_ROWS=0; sweep E-g0 gated_residual_adaln --impls ltx )
( export $G LTX_GATED_STAGE_ROWS=2; sweep E-g2 gated_residual_adaln --impls ltx )
( export $G LTX_GATED_STAGE_ROWS=1 LTX_STAGE_BLOCK_THREADS=256; sweep E-g1-bt256 gated_residual_adaln --impls ltx )
( export $G $LIFT LTX_STAGE_MAX_GROUP=128; sweep E-mg128 $NORM --impls ltx )
( export $G $LIFT LTX_STAGE_MAX_GROUP=256; sweep E-mg256 $NORM --impls ltx )
( export $G $LIFT LTX_STAGE_MAX_GROUP=256 LTX_STAGE_BLOCK_THREADS=256 LTX_STAGE_VEC=2; sweep E-mg256-v2 $NORM --impls ltx )
( export $LIFT LTX_STAGE=1 LTX_ADALN_STAGE=1 LTX_STAGE_MAX_GROUP=1024 LTX_STAGE_VEC=1; sweep E-onewave-v1 rms_norm,fused_add_rms_norm,adaln --impls ltx )
log "tests E: knob settings (tests/test_stage_knobs.py)"
LTX_KNOB_TEST_WORKERS=4 timeout 200 python3 -m pytest -q -p no:cacheprovider -n 4 \
  tests/test_stage_knobs.py 2>&1 | grep -v "^SKIPPED" | tail -30 | tee -a "$LOG"
for tool in memcheck racecheck; do
  log "sanitize $tool: rms_norm adaln, every shape staged, groups of up to 256"
  env LTX_STAGE=1 LTX_ADALN_STAGE=1 LTX_GATED_STAGE=1 $LIFT LTX_STAGE_MAX_GROUP=256 \
    LTX_STAGE_VEC=1 timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 tools/sanitize_ops.py rms_norm adaln 2>&1 | tail -2 | tee -a "$LOG"
done
use_prebuilt D && sweep D2 "$NORM" --impls ltx
use_prebuilt E && ( export $G; sweep E-g1-peers gated_residual_adaln )
for b in D2 E E-g1 E-g0 E-g2 E-g1-bt256 E-mg128 E-mg256 E-mg256-v2 E-onewave-v1; do
  log "D -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$W/D/sweep.csv" "$W/$b/sweep.csv" | tee -a "$LOG"
done
cat "$W/E-g1-peers/sweep.md" >> "$LOG"
tar -C $W -czf "$OUT/k1.tar.gz" .
log done
