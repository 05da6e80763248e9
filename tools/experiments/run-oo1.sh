#!/usr/bin/env bash
# Run OO, device call 1 (2026-12-07), on MM0 (the current CUDA source, built for sm_90 against
# torch 2.11+cu130; carry and SITE_TAR as run-mm1.sh). What the card lent decides the steps:
#   - an H200 (issue 5's and issue 4's card): run-mm1.sh's steps, LTX 2B at issue 5's setting
#     with every configuration in one process, then LLaMA-8B prefill, then memcheck;
#   - another card (run NN has the bf16 table, the sanitizers and LTX on the H100): issue 4's
#     full fp16 table (its last run: run DD's, on the H200, before
#     the erf GELU; never on an H100), then Nsight Compute's stall reasons of RMSNorm at
#     D = 8192 (run-mm2.sh's last step).
# CALL_BUDGET (default 560 s) bounds the call; the table takes what the ncu step leaves.
# Files: $OUT/oo1.log and each step's files.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start oo1
use_prebuilt MM0 | tee -a "$LOG"

if on_h200; then
  issue5_all
else
  full_table fp16 $(( $(time_left) - 70 ))
  fits 70 && NCU_METRICS=$NCU_STALL_METRICS ncu_flush rms-stall zero ltx,compile,liger 60 \
    rms_norm:1x4096x8192 rms_norm:1x16384x8192
fi
experiment_end
