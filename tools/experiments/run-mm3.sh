#!/usr/bin/env bash
# Run MM, device call 3 (the time left on the lease): LTX 2B at issue 5's setting, kernels +
# compile, torch.compile and kernels, each in its own process, no profile, with call 1's
# arguments (run-mm1.sh). Carry as call 1. Files: $OUT/mm3.log, $OUT/mm3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start mm3
use_prebuilt MM0 | tee -a "$LOG"
export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS
ltx_time kernels+compile 130
fits 120 && ltx_time compile 120
fits 90 && ltx_time kernels 90
experiment_end
