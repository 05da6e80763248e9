#!/usr/bin/env bash
# Run QQ, device call 2 (an H100 lent where the H200 was asked for; the call before it ran only
# the card check): LTX 2B kernels + compile at issue 5's setting, then the same with inductor's
# GEMM autotuning (--compile-mode max-autotune-no-cudagraphs, never measured on LTX before),
# each in its own process, the first the baseline beside the second. Ran as /tmp/qq2.sh with
# the repository root as its argument in place of this file's cd; the steps are these. Carry as
# run-qq1.sh. Files: $OUT/qq2.log, $OUT/qq2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start qq2
use_prebuilt MM0 | tee -a "$LOG"
export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS
ltx_time kernels+compile 130
export LTX_E2E_ARGS="$LTX_ISSUE5_ARGS --compile-mode max-autotune-no-cudagraphs" LTX_TAG=autotune
ltx_time kernels+compile "$(time_left)"
experiment_end
