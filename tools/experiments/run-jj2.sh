#!/usr/bin/env bash
# Run JJ, device call 2. JJ0 (the CUDA source of 329818f, unchanged at this commit) built for
# sm_90; the Python package is the tree's. Carry [".whl-j", ".prebuilt/JJ0.tar.xz"] with
# WHEELS=.whl-j (.whl-h without Liger: with it the carry is over 64 MiB; the tests that compare
# with Liger skip). Call 1 found one 28672-column gate / up product slower than its two halves
# (1320 us against 2 x 617 on an H100) and kernels+proj 0.5% slower than kernels.
#   1. every CUDA test of the suite (-k cuda, 5731 at this commit), 16 workers, the slowest 25;
#   2. tools/gemm_attention_probe.py's LLaMA-8B cases again (is the gate / up result stable?);
#   3. LLaMA-8B prefill: compile, kernels+compile, kernels+compile+qkv (q / k / v fused only);
#   4. LLaMA-8B: kernels, kernels+qkv.
# Files: $OUT/jj2.log, $OUT/jj2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start jj2
use_prebuilt JJ0 | tee -a "$LOG"

log "tests: every CUDA test, 16 workers"
run_tests tests-cuda 400 -n 16 --durations=25 -k cuda tests/
fits 20 && gemm_probe 20 probe "llama"
fits 60 && LLAMA_CONFIGS=compile,kernels+compile,kernels+compile+qkv llama_e2e 60 llama-qkv-c
fits 40 && LLAMA_CONFIGS=kernels,kernels+qkv llama_e2e 40 llama-qkv-k
experiment_end
