#!/usr/bin/env bash
# Run R, device call 3, on V (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h; $R2_ENV as in
# run-r2.sh):
#   - LTX-Video 2B: compile and kernels + compile at their fastest settings, loop profiled
#   - the CUDA tests of the LTX / FLUX integrations (the dense paths in the models)
# Files: $OUT/r3.log (summary), $OUT/e2e.*, $OUT/tests.log. (Its end-to-end step moved into
# tools/gpu_prebuilt.sh's e2e_best after it ran: the same commands.)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start r3
log "settings: ${R2_ENV:-defaults}"
[[ -n ${R2_ENV:-} ]] && export ${R2_ENV}
log "LTX 2B, part best (compile, kernels + compile), loop profiled"
e2e_best V "${R3_E2E_LIMIT:-250}"
log "tests V (CUDA): the LTX and FLUX integrations"
run_tests tests 80 -n 16 -k "cuda and (ltx or flux or diffusers)" tests/test_integrations.py
log "compute-sanitizer racecheck (defaults): rms_norm rope (call 1's was cut at 45 s)"
timeout 130 compute-sanitizer --tool racecheck python3 tools/sanitize_ops.py rms_norm rope \
  > "$OUT/sanitize-racecheck.log" 2>&1
echo "rc $?" | tee -a "$LOG"
grep -E "RACECHECK SUMMARY|sanitize_ops:|Error" "$OUT/sanitize-racecheck.log" | tail -5 \
  | tee -a "$LOG"
log done
