#!/usr/bin/env bash
# Run KK, device call 3. Call 1 (H100) ran 5612 of the 5734 CUDA tests before its limit; the
# 122 it did not reach (run-kk3-tests.txt: the tails of test_rope.py's reference tests,
# test_models.py's fusion tests with test_fusions_other_dtype[cuda-*], test_integrations.py's,
# test_scripts.py's, 7 of test_activation.py's) run here first. Call 2 ran 5 of the 17 knob
# settings (all passed; 45-214 s each on the H100); then the gated-residual-fast-bcast
# setting alone (run JJ call 3's failures), then the other settings with the time left.
# Carry as call 1. Files: $OUT/kk3.log, $OUT/tests-*.{log,xml}.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start kk3
use_prebuilt JJ0 | tee -a "$LOG"

mapfile -t ids < <(grep -v '^$' tools/experiments/run-kk3-tests.txt)
log "tests: the ${#ids[@]} CUDA tests call 1 did not reach, 16 workers"
run_tests tests-rest 240 -n 16 --durations=10 "${ids[@]}"
fits 100 && log "tests: knob setting gated-residual-fast-bcast" && \
  LTX_KNOB_TEST_WORKERS=16 run_tests tests-knob-fastb 90 -k "fast-bcast" tests/test_stage_knobs.py
left=$(time_left)
# the knob settings call 2 did not reach
(( left > 60 )) && knob_tests tests-knobs-rest "$left" \
  "not (fast-bcast or act- or dense-every or dense-off or dense-row)"
experiment_end
