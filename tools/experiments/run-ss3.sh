#!/usr/bin/env bash
# Run SS, device call 3, on any card (issue 4's targets are the H200's; the log names the
# card): issue 4's full bf16 table on SS0, every op, shape and peer, 3 shuffled rounds; then,
# with the time left, Nsight Compute's stall reasons of RMSNorm at D = 8192 (ours, torch.compile,
# Liger; the sweep's zeroing flush before each launch), never run on an H200. Carry
# `.site/site-h.tar.xz`, `.prebuilt/SS0.tar.xz`. Files: $OUT/ss3.log, $OUT/ss3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ss3
use_prebuilt SS0 | tee -a "$LOG"
full_table bf16 320
fits 210 && NCU_METRICS=$NCU_STALL_METRICS ncu_flush rms-stall zero ltx,compile,liger 200 \
  rms_norm:1x4096x8192 rms_norm:1x16384x8192
experiment_end
