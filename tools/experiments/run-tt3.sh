#!/usr/bin/env bash
# Run TT, device call 3 (2026-12-07, sixth session of the day), only on an H200: issue 5's
# LTX-Video 2B every configuration in one process on the current source (SS0 = 21b4dfd; fused
# projections have never run on an H200), the first step of run-rr1.sh alone: ~500 s of device
# time were left after calls 1 and 2 (H100), not enough for run-rr1.sh's LLaMA and memcheck
# after it (both ran on this source on the H100, runs QQ and OO). Carry `.site/site-h.tar.xz`,
# `.prebuilt/SS0.tar.xz`; TT3_LIMIT: seconds for the LTX step (290). Files: $OUT/tt3.log, $OUT/tt3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  nvidia-smi --query-gpu=name --format=csv,noheader
  echo "not an H200: nothing run"
  exit 0
fi
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start tt3
use_prebuilt SS0 | tee -a "$LOG"
export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS LTX_E2E_KERNELS=$LTX_ISSUE5_KERNELS
ltx_e2e ltx-all "${TT3_LIMIT:-290}" --all-configs
experiment_end
