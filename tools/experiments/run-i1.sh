#!/usr/bin/env bash
# Queued for the next device session (not run yet). One call, no device build: on the
# development machine first (torch 2.11+cu130 Python), the tree's extension and the queued
# patch's, each built for sm_90 without PTX and archived (tools/gpu_prebuilt.sh):
#   LTX_CUDA_CAPABILITIES=9.0 python tools/build.py --backends cuda --no-ptx
#   tar -C build -cJf .prebuilt/A.tar.xz torch211-cxx11-cu130-x86_64-linux
#   git apply tools/experiments/write_loads_first.patch   # ... build and archive as B, then
#   git apply -R tools/experiments/write_loads_first.patch
# then this script on the GPU machine (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - A: the CUDA tests run H did not run on the GPU (the heads path's capped blocks:
#     test_rope_qk_heads_long_rows; the activation and rms_norm_rope families on this build)
#   - A against B (write_loads_first.patch), ours only, bf16, every RMSNorm / AdaLN shape, A
#     timed first and last; B's rms_norm and adaln CUDA tests
#   - LTX-Video 2B end to end on A (run G's numbers are the latest)
# Few files come back from a lease: $OUT/i1.log and $OUT/i1.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/i1.log
W=/tmp/i1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln
sweep() {  # name ops
  log "sweep $1: $2"
  timeout 120 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops "$2" --out "$W/$1" \
    2>&1 | tail -1 | tee -a "$LOG"
  tar -C $W -czf "$OUT/i1.tar.gz" .
}
tests() {  # name pytest-arguments...
  local name=$1; shift
  log "tests $name: $*"
  timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 "$@" 2>&1 | grep -v "^SKIPPED" \
    | tail -4 | tee -a "$LOG"
}
use_prebuilt A && {
  tests A -k cuda tests/test_rope.py tests/test_activation.py  # rope: incl. long_rows, heads
  sweep A "$NORM"
}
use_prebuilt B && { sweep B "$NORM"; tests B -k cuda tests/test_rms_norm.py tests/test_adaln.py; }
use_prebuilt A && sweep A2 "$NORM"
for b in A2 B; do
  log "A -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$W/A/sweep.csv" "$W/$b/sweep.csv" | tee -a "$LOG"
done
PREBUILT=A PARTS=ltx timeout 240 bash tools/gpu_e2e.sh > /dev/null 2>&1
grep -E "ms/step|per step|against|device" "$OUT/e2e.log" | tail -12 | tee -a "$LOG"
log done
