#!/usr/bin/env bash
# Run LL, device calls 2 and 3: knob settings of tests/test_stage_knobs.py (KNOB_K, a pytest -k
# expression over the setting names; all of them when unset), one after another, each a child
# pytest of 16 workers, on LL0 (run-ll1.sh). Then, with FULL_TABLE=1 and the time left,
# issue 4's full bf16 table (every op, shape and peer, 3 shuffled rounds). Carry as call 1.
# Files: $OUT/ll2.log, $OUT/ll2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ll2
use_prebuilt LL0 | tee -a "$LOG"

knob_tests tests-knobs "$(time_left ${KNOB_BUDGET:-})" "${KNOB_K:-}"
if [[ ${FULL_TABLE:-0} == 1 ]] && fits 345; then
  full_table bf16 340
fi
experiment_end
