#!/usr/bin/env bash
# Run X, device call 1, on X0 (run W's CUDA source, 9988e11; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h): the LTX-Video step with each configuration's transformer call captured in
# one CUDA graph (benchmark_example.py --cuda-graph), against the fastest settings so far
# (inductor's CUDA graphs, reduce-overhead) on the same lease:
#   - the GPU tests of --cuda-graph (tiny model: eager + kernels, kernels + compile --freeze)
#   - LTX 2B, 49 frames 768x512, batch 1 x2 (CFG), bf16: eager, compile, kernels and
#     kernels + compile in one process, each call one graph replay (--freeze for the compiled
#     ones, --gelu-in-matmul for the kernels), profiled (one step and 3 steps of the loop)
#   - kernels + compile at run U's fastest settings (reduce-overhead, --freeze,
#     --gelu-in-matmul, --skip-module-guards), profiled, for the same-lease comparison
# At most 8 files come back: $OUT/x1.log (summary), $OUT/x1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start x1
use_prebuilt X0 | tee -a "$LOG"
log "GPU tests of --cuda-graph"
run_tests tests-graph 200 -k "cuda_graph" tests/test_scripts.py
ltx_e2e ltx-graph 330 --all-configs --cuda-graph --freeze --gelu-in-matmul
ltx_e2e ltx-ro-kc 150 --compile --use-optimized-kernels --freeze --compile-mode reduce-overhead \
  --gelu-in-matmul --skip-module-guards
experiment_end
