#!/usr/bin/env bash
# Run S, device call 1, on W (the kernels launched with programmatic dependent launch on sm_90:
# common/launch.cuh launch_kernel, common/grid_dep.cuh; LTX_PDL=0 turns it off)
# (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the launch-chain tests (ops back to back, eager and in a CUDA graph, PDL on and off)
#   - LTX-Video 2B at the fastest settings: compile, kernels + compile (PDL on), then kernels +
#     compile with LTX_PDL=0, one lease
#   - RMSNorm's dense path beyond 8 MiB in blocks of 256 threads (one row a block at D = 2048,
#     Liger's layout) against the defaults: ours alone, bf16, interleaved twice
#   - the CUDA tests of rms_norm and the activations, as far as the call's time goes
# Files: $OUT/s1.log (summary), $OUT/e2e.*, $OUT/s1.tar.gz (sweeps, A/B table), $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start s1
use_prebuilt W | tee -a "$LOG"
log "tests W (CUDA): launch chains, PDL on and off"
run_tests tests-launch 90 tests/test_launch.py
log "LTX 2B, part best: compile, kernels + compile (PDL on, the default)"
e2e_best W "${S1_E2E_LIMIT:-250}"
log "LTX 2B, kernels + compile with LTX_PDL=0"
LTX_PDL=0 COMPILED_KERNELS=use-optimized-kernels BEST_TAG=-pdl0 e2e_best W 125
sweep() {  # name, env...: ours alone, bf16
  local name=$1; shift
  log "ours, $name"
  env "$@" timeout 30 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 \
    --ops rms_norm,fused_add_rms_norm --out "$W/$name" 2>&1 | tail -1
}
B256=(LTX_RMS_DENSE_MAX_MB=1000000 LTX_DENSE_BLOCK_THREADS=256)
sweep def1 LTX_NONE=1; sweep b256-1 "${B256[@]}"; sweep def2 LTX_NONE=1; sweep b256-2 "${B256[@]}"
log "A = defaults, B = RMSNorm dense at every size in blocks of 256 threads"
python3 tools/ab_table.py $W/def1/sweep.csv $W/def2/sweep.csv -- \
  $W/b256-1/sweep.csv $W/b256-2/sweep.csv | tee "$W/ab.md" | tee -a "$LOG"
tar -C $W -czf "$OUT/s1.tar.gz" .
log "tests W (CUDA): rms_norm, activations"
run_tests tests 80 -n 16 -k cuda tests/test_rms_norm.py tests/test_activation.py
log done
