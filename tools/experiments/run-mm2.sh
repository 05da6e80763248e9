#!/usr/bin/env bash
# Run MM, device call 2: issue 4's full bf16 table on the current source (MM0, run-mm1.sh; the
# last full table, run DD's, predates the erf GELU of 216d5fc), every op, shape and peer, 3
# shuffled rounds (run OO's fp16 table took ~290 s on the H100); then, with the time left,
# Nsight Compute's stall reasons of RMSNorm at D = 8192 (ours, torch.compile, Liger, the sweep's
# zeroing flush before each launch: change 96 measured them on an H100 only). Application
# replay runs the script once a metric pass: run II's took 191 s, so the step gets 200.
# compute-sanitizer, here until run OO, is gone: runs NN and OO ran memcheck and racecheck over
# this source (clean).
# Carry as call 1. MM2_PREBUILT names another prebuilt than MM0 (SS0: run SS's source).
# Files: $OUT/mm2.log, $OUT/mm2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start mm2
use_prebuilt "${MM2_PREBUILT:-MM0}" | tee -a "$LOG"

full_table bf16 320
fits 210 && NCU_METRICS=$NCU_STALL_METRICS ncu_flush rms-stall zero ltx,compile,liger 200 \
  rms_norm:1x4096x8192 rms_norm:1x16384x8192
experiment_end
