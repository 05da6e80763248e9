#!/usr/bin/env bash
# Run DD, device call 4, on Y0 (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h), with what the
# session's device time had left (~250 s with the cold start): LLaMA-8B prefill of 4096
# tokens, eager / kernels / compile / kernels + compile in 3 alternating rounds of 5 (issue 5:
# kernels + compile faster than compile; run AA 1.007x, run Z 1.017x).
# Files: $OUT/dd4.log, $OUT/dd4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start dd4
use_prebuilt Y0 | tee -a "$LOG"
llama_e2e 100
experiment_end
