#!/usr/bin/env bash
# Run T, device call 3, on E (HEAD 7beb2b7: D plus rope.cu's smaller blocks for grids below the
# SM count) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - CUDA tests of the rope family at the defaults; the knob test rope-256-thread-blocks
#   - ours alone, rope_qk and rope_qk_gqa, bf16: 256-thread blocks at every grid
#     (LTX_ROPE_MIN_BLOCK_THREADS=256, D's launch) against the default, interleaved twice
#   - rope_qk and rope_qk_gqa with every peer, bf16 (the table's rows)
#   - issue 5's configurations on one lease: LTX-Video 2B compile and kernels + compile at
#     their fastest settings (loop profiled), eager and kernels (one process), LLaMA-8B-sized
#     prefill (the four configurations)
# Files: $OUT/t3.log (summary), $OUT/t3.tar.gz (sweeps, A/B table), $OUT/e2e.*, $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start t3
use_prebuilt E | tee -a "$LOG"
log "tests E (CUDA): rope family"
run_tests tests 100 -n 16 -k cuda tests/test_rope.py
log "knob test: rope's rows path in 256-thread blocks at every grid"
LTX_KNOB_TEST_WORKERS=16 run_tests tests-knobs 70 -k "rope-256" tests/test_stage_knobs.py
OPS=rope_qk,rope_qk_gqa
sweep() {  # name, env...: ours alone, bf16
  local name=$1; shift
  log "ours, $name"
  env "$@" timeout 30 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops $OPS \
    --out "$W/$name" 2>&1 | tail -1
}
sweep b256-1 LTX_ROPE_MIN_BLOCK_THREADS=256; sweep b64-1; sweep b256-2 LTX_ROPE_MIN_BLOCK_THREADS=256
sweep b64-2
log "A = 256-thread blocks at every grid, B = down to 64 below the SM count (default)"
python3 tools/ab_table.py $W/b256-1/sweep.csv $W/b256-2/sweep.csv -- $W/b64-1/sweep.csv \
  $W/b64-2/sweep.csv | tee "$W/ab.md" | tee -a "$LOG"
peer_sweeps $OPS "$W" 50 bf16
tar -C $W -czf "$OUT/t3.tar.gz" .
log "issue 5: LTX 2B best (compile, kernels + compile), eager + kernels, LLaMA 8B"
PREBUILT=E PARTS="best compare llama" LTX_ARGS="--profile-loop 3" \
  LLAMA_ARGS="--rounds 3 --iterations 5" timeout "${T3_E2E_LIMIT:-290}" bash tools/gpu_e2e.sh \
  > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|per round|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
