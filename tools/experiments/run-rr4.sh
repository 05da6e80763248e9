#!/usr/bin/env bash
# Run RR, device call 4: what ~200 s of device time can hold of run-rr3.sh. RR2's (change 99,
# the two-pass path on by default) CUDA tests of the rows it and its neighbours take at the
# defaults: test_rms_norm.py's two-pass, register-path and dense-path grid tests. Carry as
# run-rr3.sh. Files: $OUT/rr4.log, $OUT/rr4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start rr4
use_prebuilt RR2 | tee -a "$LOG"
log "tests: test_rms_norm.py's row-grid tests, CUDA, defaults"
run_tests rms-rows "${RR4_TEST_LIMIT:-100}" -n 16 \
  -k "cuda and (two_pass or register_rows or dense_rows_many)" tests/test_rms_norm.py
experiment_end
