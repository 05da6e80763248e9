#!/usr/bin/env bash
# Run R, device call 4, on V (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): the knob tests
# of the new settings, one pytest each (call 2's single run of all three was cut at 120 s
# before its first setting finished): RMSNorm at two vectors a thread, one-row blocks, every
# dense path off (the sm_75 / sm_80 paths of the RMSNorm and norm + rope tests).
# Files: $OUT/r4.log (summary), $OUT/knob-*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start r4
use_prebuilt V | tee -a "$LOG"
for s in rms-dense-two-vectors dense-row-blocks dense-off; do
  log "knob test $s"
  LTX_KNOB_TEST_WORKERS=16 run_tests "knob-$s" \
    $([[ $s == dense-off ]] && echo 280 || echo 90) -k "$s" tests/test_stage_knobs.py
done
log done
