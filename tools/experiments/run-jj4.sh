#!/usr/bin/env bash
# Run JJ, device call 4 (for the next session: this one's device time ran out). Call 3 ran
# test_stage_knobs.py's 17 settings at once under `pytest -n 16` (each a child pytest of 14
# workers: ~250 CUDA processes on one GPU); the tiny-LLaMA script tests beside them failed with
# "CUDA out of memory" on the H200, the gated-residual-fast-bcast setting failed 8 gated_residual
# reference tests (strided and misaligned layouts among them, which take the row kernel, a path
# that setting does not change; the error lines were not captured), and the children ran on
# into the rope step, which its limit cut. test_stage_knobs.py now runs one setting at a time
# (a file lock) and reports the child's error lines; run_tests ends what its pytest left
# running (its process group) and keeps a JUnit XML of the tests that ran.
# Carry as calls 1-3. Each step alone on the GPU:
#   1. test_scripts.py's CUDA tests and test_launch.py, 8 workers;
#   2. the gated-residual-fast-bcast setting alone (its 648 tests, 14 workers);
#   3. test_rope.py's CUDA tests (1780; 180 s with 16 workers in run W).
# Files: $OUT/jj4.log, $OUT/jj4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start jj4
use_prebuilt JJ0 | tee -a "$LOG"

log "tests: test_scripts.py (cuda), test_launch.py, 8 workers"
run_tests tests-scripts 200 -n 8 --durations=10 tests/test_launch.py tests/test_scripts.py \
  -k "cuda or chain"
fits 120 && log "tests: knob setting gated-residual-fast-bcast" && \
  run_tests tests-knob-fastb 120 -k "fast-bcast" tests/test_stage_knobs.py
left=$(( ${CALL_BUDGET:-560} - ($(date +%s) - CALL_T0) - 15 ))
if (( left > 60 )); then
  log "tests: test_rope.py (cuda), 16 workers, ${left} s"
  run_tests tests-rope "$left" -n 16 -k cuda tests/test_rope.py
fi
experiment_end
