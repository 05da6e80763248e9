#!/usr/bin/env bash
# Run J, device call 1. Two extensions built on the development machine for sm_90 without PTX
# (tools/gpu_prebuilt.sh; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   A: the kernels of 92f6912 (run H's, the last to run here);
#   B: the staged row kernels (common/stage.cuh: rows and per-column operands copied to shared
#      memory by cp.async) for RMSNorm, fused_add_rms_norm, AdaLN and the gated AdaLN.
# In one call: B's CUDA tests of those families (staged path on, and with LTX_STAGE=0 the
# register path that sm_75 keeps), compute-sanitizer memcheck / racecheck over them, our kernels
# alone (bf16, every full-table shape of the four ops) for A, B under its knobs, and A again,
# then Nsight Compute on two cases. Few files come back: $OUT/j1.log and $OUT/j1.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/j1.log
W=/tmp/j1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,adaln_per_token,gated_residual_adaln
sweep() {  # name ops; the environment's knobs apply
  log "sweep $1: $2 $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 150 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops "$2" --out "$W/$1" \
    2>&1 | tail -1 | tee -a "$LOG"
  tar -C $W -czf "$OUT/j1.tar.gz" .
}
tests() {  # name pytest-arguments...
  local name=$1; shift
  log "tests $name: $* $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 240 python3 -m pytest -q -p no:cacheprovider -n 14 "$@" 2>&1 | grep -v "^SKIPPED" \
    | tail -6 | tee -a "$LOG"
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
use_prebuilt A && sweep A "$NORM"
use_prebuilt B || exit 1
sweep B "$NORM"
tests B -k cuda tests/test_rms_norm.py tests/test_adaln.py
LTX_STAGE=2 sweep B-stage2 "$NORM"
LTX_STAGE_BLOCK_THREADS=256 sweep B-bt256 "$NORM"
LTX_STAGE_BLOCK_THREADS=64 sweep B-bt64 "$NORM"
LTX_STAGE_VEC=8 sweep B-vec8 "$NORM"
for tool in memcheck racecheck; do
  log "sanitize $tool"
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 tools/sanitize_ops.py rms_norm adaln 2>&1 | tail -3 | tee -a "$LOG"
done
LTX_STAGE=0 tests B-stage0 -k cuda tests/test_rms_norm.py tests/test_adaln.py
use_prebuilt A && sweep A2 "$NORM"
for b in A2 B B-stage2 B-bt256 B-bt64 B-vec8; do
  log "A -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$W/A/sweep.csv" "$W/$b/sweep.csv" | tee -a "$LOG"
done
use_prebuilt B && {
  log "ncu"
  NCU_IMPLS=ltx,liger,compile timeout 120 ncu --clock-control none --nvtx --nvtx-include "prof/" \
    --set detailed -o $W/ncu -f python3 tools/ncu_ops.py rms_norm:1x4096x2048 \
    adaln:2x2688x2048 gated_residual_adaln:2x2688x2048 2>&1 | grep -v "^==PROF==" | tail -4 \
    | tee -a "$LOG"
  ncu --import $W/ncu.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,smsp__inst_executed.sum,\
launch__shared_mem_per_block_dynamic,launch__occupancy_limit_shared_mem > $W/ncu-summary.csv 2>&1
  ncu --import $W/ncu.ncu-rep --page details > $W/ncu-details.txt 2>&1
  cut -c1-400 $W/ncu-summary.csv | tail -12 | tee -a "$LOG"
}
tar -C $W -czf "$OUT/j1.tar.gz" .
log done
