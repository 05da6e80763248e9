#!/usr/bin/env bash
# Run RR, device call 3 (written; never given a machine in run RR, so it is the next session's
# first call for change 99; run-rr4.sh ran its first step's core on an H200): change 99,
# RMSNorm's two-pass path, on by default (RR2: sm_90, 16-bit rows of 1024 vectors from 64 MiB
# of x; built here against torch 2.11+cu130). On any card:
# test_rms_norm.py's CUDA tests at the defaults (the new test_rms_norm_two_pass_rows among
# them), compute-sanitizer memcheck and racecheck of its rows (knobs on, any size), the knob
# setting that sends every row it can take down the path in 512-thread blocks, then ours beside
# every peer at D = 8192 in bf16 and fp16, 3 shuffled rounds. Carry `.site/site-h.tar.xz`,
# `.prebuilt/RR2.tar.xz`. Files: $OUT/rr3.log, $OUT/rr3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start rr3
use_prebuilt RR2 | tee -a "$LOG"

log "tests: test_rms_norm.py, CUDA, defaults"
run_tests rms-cuda 150 -n 16 -k "cuda and not huge" tests/test_rms_norm.py
rms_two_pass_checks 100 "rms-two-pass-512"
experiment_end
