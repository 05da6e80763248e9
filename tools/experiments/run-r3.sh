#!/usr/bin/env bash
# Run R, device call 3, on V (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h; $R2_ENV as in
# run-r2.sh):
#   - LTX-Video 2B: compile and kernels + compile at their fastest settings, loop profiled
#   - the CUDA tests of the LTX / FLUX integrations (the dense paths in the models)
# Files: $OUT/r3.log (summary), $OUT/e2e.*, $OUT/tests.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start r3
log "settings: ${R2_ENV:-defaults}"
[[ -n ${R2_ENV:-} ]] && export ${R2_ENV}
log "LTX 2B, part best (compile, kernels + compile), loop profiled"
PREBUILT=V PARTS=best LTX_ARGS="--profile-loop 3" timeout ${R3_E2E_LIMIT:-250} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|host-bound|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log "tests V (CUDA): the LTX and FLUX integrations"
run_tests tests 80 -n 16 -k "cuda and (ltx or flux or diffusers)" tests/test_integrations.py
log "compute-sanitizer racecheck (defaults): rms_norm rope (call 1's was cut at 45 s)"
timeout 130 compute-sanitizer --tool racecheck python3 tools/sanitize_ops.py rms_norm rope \
  > "$OUT/sanitize-racecheck.log" 2>&1
echo "rc $?" | tee -a "$LOG"
grep -E "RACECHECK SUMMARY|sanitize_ops:|Error" "$OUT/sanitize-racecheck.log" | tail -5 \
  | tee -a "$LOG"
log done
