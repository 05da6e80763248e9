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

knob_tests tests-knobs "$(time_left)" "${KNOB_K:-}"
experiment_end
