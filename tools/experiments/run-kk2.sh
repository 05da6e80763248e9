#!/usr/bin/env bash
# Run KK, device call 2: tests/test_stage_knobs.py, every knob setting, one after another (each
# a child pytest with 16 workers; the file lock keeps them serial in any case). Carry as call 1.
# The settings run in sorted order; the JUnit XML names those a cut run reached.
# Files: $OUT/kk2.log, $OUT/tests-knobs.{log,xml}.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start kk2
use_prebuilt JJ0 | tee -a "$LOG"

left=$(( ${CALL_BUDGET:-560} - ($(date +%s) - CALL_T0) - 15 ))
log "tests: every knob setting, ${left} s"
sel=()
[[ -n ${KNOB_K:-} ]] && sel=(-k "$KNOB_K")
LTX_KNOB_TEST_WORKERS=16 run_tests tests-knobs "$left" --durations=20 "${sel[@]}" \
  tests/test_stage_knobs.py
experiment_end
