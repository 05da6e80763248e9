#!/usr/bin/env bash
# Run KK, device call 1: the whole CUDA suite of the current tree in one call, on one GPU. The
# CUDA source is unchanged since 216d5fc (338a50e changed comments only), so JJ0 is its build.
# Run JJ call 2 (H100) passed 5564 CUDA tests before its 400 s limit, missing about 167 at the
# end of the collection order (test_rope.py's tail, test_scripts.py); call 3's attempt at them
# was spoiled by test_stage_knobs.py's settings running at once. Since then, review fixes changed
# the fusion helpers' Python (integrations: _kernel_takes), whose CUDA tests have not run
# (test_fusions_other_dtype[cuda] among them). Carry [".whl-j", ".prebuilt/JJ0.tar.xz"],
# WHEELS=.whl-j. This call replaces run-jj4.sh, which never ran.
#   1. every CUDA test (-k cuda; test_stage_knobs.py's settings are not selected by it), 16
#      workers, the files call 2 did not reach first;
#   2. with the time left, the gated-residual-fast-bcast knob setting alone (call 3's failures).
# Files: $OUT/kk1.log, $OUT/tests-*.{log,xml}.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start kk1
use_prebuilt JJ0 | tee -a "$LOG"

log "tests: every CUDA test, 16 workers"
first="tests/test_scripts.py tests/test_rope.py tests/test_integrations.py tests/test_models.py"
rest=$(ls tests/test_*.py | grep -v -e test_stage_knobs $(printf -- '-e %s ' $first))
run_tests tests-cuda 470 -n 16 --durations=25 -k cuda $first $rest
fits 60 && log "tests: knob setting gated-residual-fast-bcast" && \
  run_tests tests-knob-fastb 60 -k "fast-bcast" tests/test_stage_knobs.py
experiment_end
