#!/usr/bin/env bash
# Run JJ, device call 3: the CUDA tests call 2 did not reach. Call 2 ran `-k cuda` over the
# whole suite with 16 workers and was cut by its 400 s limit at 5564 passed, none failed, about
# 167 of 5731 not run: with xdist's load scheduling, the end of the collection order
# (test_rope.py's tail, test_scripts.py). `-k cuda` also leaves out the CUDA-only files whose
# test names do not say cuda (test_stage_knobs.py, test_launch.py). Carry as call 2.
#   1. test_scripts.py's CUDA tests, test_stage_knobs.py and test_launch.py, 16 workers;
#   2. test_rope.py's CUDA tests (1780), 16 workers, in what the call has left.
# Files: $OUT/jj3.log, $OUT/jj3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start jj3
use_prebuilt JJ0 | tee -a "$LOG"

log "tests: test_scripts.py (cuda), test_stage_knobs.py, test_launch.py, 16 workers"
run_tests tests-scripts 200 -n 16 --durations=10 tests/test_stage_knobs.py tests/test_launch.py \
  "tests/test_scripts.py" -k "cuda or stage or launch or chain"
left=$(time_left)
if (( left > 60 )); then
  log "tests: test_rope.py (cuda), 16 workers, ${left} s"
  run_tests tests-rope "$left" -n 16 -k cuda tests/test_rope.py
fi
experiment_end
