#!/usr/bin/env bash
# Run S, device call 2, on X (the activations' flat kernel, change 49: LTX_ACT_FLAT [1: the
# gated ops]) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - CUDA tests: the activations at the defaults, then under the knobs (row kernel only; flat
#     for every activation), and the back-to-back chains
#   - ours alone, the activations, bf16 and fp16: the row kernel (LTX_ACT_FLAT=0) against the
#     flat kernel for every activation (=2), interleaved twice; the flat kernel in blocks of
#     256 threads once
#   - the activations with every peer, bf16 and fp16, at the defaults (the table's rows)
#   - LTX-Video 2B eager and kernels (one process), LLaMA-8B-sized prefill (the four
#     configurations): with call 1's compile and kernels + compile, issue 5's configurations
#     on one lease
# Files: $OUT/s2.log (summary), $OUT/s2.tar.gz (sweeps, A/B table), $OUT/e2e.*, $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start s2
use_prebuilt X | tee -a "$LOG"
log "tests X (CUDA): activations, launch chains"
run_tests tests 90 -n 16 -k cuda tests/test_activation.py tests/test_launch.py
log "knob tests: the activations' row kernel only, the flat kernel for every activation"
LTX_KNOB_TEST_WORKERS=16 run_tests tests-knobs 110 -k "act-" tests/test_stage_knobs.py
OPS=gelu_tanh,geglu,silu_and_mul
sweep() {  # name, env...: ours alone, bf16 and fp16
  local name=$1; shift
  log "ours, $name"
  env "$@" timeout 40 python3 benchmarks/sweep.py --impls ltx --dtypes bf16,fp16 --ops $OPS \
    --out "$W/$name" 2>&1 | tail -1
}
sweep row1 LTX_ACT_FLAT=0; sweep flat1 LTX_ACT_FLAT=2; sweep row2 LTX_ACT_FLAT=0
sweep flat2 LTX_ACT_FLAT=2; sweep flat256 LTX_ACT_FLAT=2 LTX_ACT_FLAT_THREADS=256
log "A = row kernel (LTX_ACT_FLAT=0), B = flat kernel for every activation (=2)"
python3 tools/ab_table.py $W/row1/sweep.csv $W/row2/sweep.csv -- \
  $W/flat1/sweep.csv $W/flat2/sweep.csv | tee "$W/ab.md" | tee -a "$LOG"
log "A = flat kernel, blocks of 128 threads, B = of 256 (once)"
python3 tools/ab_table.py $W/flat1/sweep.csv $W/flat2/sweep.csv -- $W/flat256/sweep.csv \
  | tee "$W/ab-256.md" | tee -a "$LOG"
for dt in bf16 fp16; do
  log "$OPS: ours (defaults) and every peer, $dt"
  timeout 70 python3 benchmarks/sweep.py --dtypes $dt --ops $OPS --out "$W/peers-$dt" 2>&1 \
    | tail -1
done
grep -E "ltx" "$W"/peers-*/sweep.md >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/s2.tar.gz" .
log "LTX 2B eager + kernels (one process); LLaMA 8B, four configurations"
PREBUILT=X PARTS="compare llama" LLAMA_ARGS="--rounds 3 --iterations 5" \
  timeout "${S2_E2E_LIMIT:-200}" bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|  (eager|compile|kernels)|against|per round|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
