#!/usr/bin/env bash
# Run MM, device call 1: issue 5 on one lease with the tree as it is. MM0 = the CUDA source of
# 5aa14e9 (unchanged since 216d5fc apart from comments: the same source as run LL's LL0), built
# for sm_90 on the development machine against torch 2.11+cu130; the Python package is the
# tree's. Carry [".site/site-h.tar.xz", ".prebuilt/MM0.tar.xz"], SITE_TAR=.site/site-h.tar.xz
# (tools/device_wheels.sh --packed: diffusers and the pinned transformers). Asked for on the
# H200 (issue 5's card; the last H200 run of this source's model numbers is run EE's, before
# the erf GELU and --fuse-projections). In order, each later step only while the call has time:
#   1. LTX 2B at issue 5's setting (49 frames 768x512, batch 1 x2 CFG, bf16, 10 steps after 2
#      warmup), every configuration in one process, --cuda-graph --freeze --gelu-in-matmul,
#      cuBLASLt's workspace at 0, --fuse-projections for the kernels configurations, profiled;
#   2. LLaMA-8B prefill (4096 tokens), every configuration, 3 alternating rounds of 5;
#   3. compute-sanitizer memcheck of every op family (tools/sanitize_ops.py; the erf GELU's
#      activation code has not been through it since 216d5fc).
# Files: $OUT/mm1.log, $OUT/mm1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start mm1
use_prebuilt MM0 | tee -a "$LOG"

issue5_all
experiment_end
