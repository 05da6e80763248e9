#!/usr/bin/env bash
# Run L, device call 1. Extensions built on the development machine for sm_90 without PTX
# (tools/gpu_prebuilt.sh; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   G: run K's kernels (7062991);
#   H: G with rms_norm_rope / rms_norm_rope_qk walking the rows that share a table row side by
#      side (common/op_checks.h shared_table_rows_inner; host code only).
# In one call: our rope ops alone on G and H (bf16; rms_norm_rope_qk_shared: the tables of one
# sample expanded over the batch, as the injection now passes them); LTX-Video 2B end to end on
# H (eager, compile, kernels, kernels + compile, then both compiled ones with CUDA graphs),
# every configuration profiled with the host / device timeline; then the rope and LTX
# integration CUDA tests on H for the time left. Few files come back: $OUT/l1.log,
# $OUT/l1.tar.gz, e2e.log / e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/l1.log
W=/tmp/l1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
ROPE=rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared
sweep() {  # name ops [sweep arguments]; the environment's knobs apply
  local name=$1 ops=$2; shift 2
  log "sweep $name: $ops $* $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 120 python3 benchmarks/sweep.py --dtypes bf16 --ops "$ops" --out "$W/$name" "$@" \
    2>&1 | tail -1 | tee -a "$LOG"
  tar -C $W -czf "$OUT/l1.tar.gz" .
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
use_prebuilt H || exit 1
use_prebuilt G > /dev/null && sweep G "$ROPE" --impls ltx
use_prebuilt H > /dev/null && sweep H "$ROPE" --impls ltx
log "G -> H (B / A < 1: H faster)"
python3 tools/ab_table.py "$W/G/sweep.csv" "$W/H/sweep.csv" | tee -a "$LOG"
log "e2e ltx, cudagraphs on H"
PREBUILT=H PARTS=ltx timeout 200 bash tools/gpu_e2e.sh > /dev/null 2>&1
TORCH_LOGS=perf_hints PREBUILT=H PARTS=cudagraphs timeout 170 bash tools/gpu_e2e.sh \
  > /dev/null 2>&1
grep -E "ms/step|against|eager|compile|kernels|timeline|host|gap|cudagraph|skipping" \
  "$OUT/e2e.log" | grep -v "^==" | tail -80 | tee -a "$LOG"
log "tests H: rope, LTX integration (CUDA only; what the time left allows)"
use_prebuilt H > /dev/null
timeout 110 python3 -m pytest -q -p no:cacheprovider -n 14 tests/test_rope.py \
  tests/test_integrations.py -k "cuda and (rope or ltx or LTX)" 2>&1 | tail -4 | tee -a "$LOG"
tar -C $W -czf "$OUT/l1.tar.gz" .
log done
