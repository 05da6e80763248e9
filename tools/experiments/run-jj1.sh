#!/usr/bin/env bash
# Run JJ, device call 1. JJ0 = 329818f's CUDA source (unchanged since 338a50e) built for sm_90
# on the development machine; the Python package is the tree's (fuse_projections). Carry
# [".whl-h", ".prebuilt/JJ0.tar.xz"] with WHEELS=.whl-h (diffusers and the pinned transformers:
# the fused-projection tests and both models need them). The question: does one matrix product
# for q / k / v (and for gate / up) pay, where the models' own forwards run three (two)?
# Inductor's freezing already concatenates them (LTX's compiled runs use --freeze); LLaMA's
# per-layer compile runs without freezing, so there compile alone keeps the separate products.
# In order, each later step only while the call has time for it:
#   1. the fused-projection tests on CUDA (test_models.py, test_integrations.py), 8 workers;
#   2. tools/gemm_attention_probe.py: LLaMA-8B's projections alone and fused, LTX 2B's q / k / v
#      fused (one of three: the 2048-column product), each in a CUDA graph of 20 calls;
#   3. LLaMA-8B prefill (4096 tokens): compile, kernels+compile, kernels+compile+proj in 3
#      alternating rounds of 5 (one process);
#   4. LLaMA-8B: kernels and kernels+proj, the same way;
#   5. LTX 2B at issue 5's setting, kernels alone (no compile: nothing fuses its projections)
#      with and without --fuse-projections, one process each, profiled.
# Files: $OUT/jj1.log, $OUT/jj1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start jj1
use_prebuilt JJ0 | tee -a "$LOG"

log "tests: fused projections on CUDA, 8 workers"
run_tests tests-proj 100 -n 8 -k "cuda and fuse_projections" tests/test_models.py \
  tests/test_integrations.py

fits 40 && gemm_probe 40 probe "llama|linear qkv|linear proj"
fits 150 && LLAMA_CONFIGS=compile,kernels+compile,kernels+compile+proj llama_e2e 150 llama-proj-c
fits 90 && LLAMA_CONFIGS=kernels,kernels+proj llama_e2e 90 llama-proj-k
export LTX_E2E_ARGS="--cuda-graph --gelu-in-matmul --cublaslt-workspace-kib 0"
export LTX_E2E_KERNELS="nvjet"
fits 75 && ltx_e2e ltx-k 75 --use-optimized-kernels
fits 75 && ltx_e2e ltx-k-proj 75 --use-optimized-kernels --fuse-projections
experiment_end
