#!/usr/bin/env bash
# Run LL, device call 1: issue 5 on one lease with the tree as it is (LL0 = the CUDA source of
# 0978032, unchanged since 216d5fc apart from comments, built for sm_90 on the development
# machine against torch 2.11+cu130; the Python package is the tree's, fuse_projections
# included). Carry [".site/site-h.tar.xz", ".prebuilt/LL0.tar.xz"], SITE_TAR=.site/site-h.tar.xz
# (tools/device_wheels.sh --packed: diffusers and the pinned
# transformers). Asked for on the H200 (issue 5's card). In order, each later step only while
# the call has time for it:
#   1. LTX 2B at issue 5's setting (49 frames 768x512, batch 1 x2 CFG, bf16, 10 steps after 2
#      warmup), every configuration in one process (eager, compile, kernels, kernels + compile),
#      --cuda-graph --freeze --gelu-in-matmul, cuBLASLt's workspace at 0, --fuse-projections
#      (the kernels configurations: one q / k / v product, change 97), profiled;
#   2. LLaMA-8B prefill (4096 tokens), every configuration, 3 alternating rounds of 5;
#   3. with the time left, knob settings of test_stage_knobs.py that run KK did not reach
#      (KNOB_K, a pytest -k expression over the setting names).
# Files: $OUT/ll1.log, $OUT/ll1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ll1
use_prebuilt LL0 | tee -a "$LOG"

export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS LTX_E2E_KERNELS=$LTX_ISSUE5_KERNELS
ltx_e2e ltx-all 290 --all-configs
fits 100 && llama_e2e 100
left=$(time_left)
(( left > 60 )) && [[ -n ${KNOB_K:-} ]] && knob_tests tests-knobs "$left" "$KNOB_K"
experiment_end
