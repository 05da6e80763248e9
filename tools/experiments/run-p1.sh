#!/usr/bin/env bash
# Run P, device call 1, on S (101cb5b, run O's last kernels) and T (27847b3: the wide path of
# the row kernels) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - ours alone, S / T / S / T, bf16: rms_norm, fused_add_rms_norm, adaln, adaln_per_token,
#     gated_residual_adaln over the sweep's shapes
#   - the CUDA tests of rms_norm and adaln on T, and the knob tests of the wide path
#   - compute-sanitizer memcheck and racecheck of the rms_norm and adaln families on T with
#     the wide path forced at every grid
# Files: $OUT/p1.log (summary), $OUT/p1.tar.gz (sweeps), $OUT/tests.log, $OUT/sanitize-*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start p1
AB_DTYPES=bf16 AB_SWEEP_LIMIT=70 prebuilt_ab S T \
  rms_norm,fused_add_rms_norm,adaln,adaln_per_token,gated_residual_adaln "$W" 2>&1 | tee -a "$LOG"
tar -C $W -czf "$OUT/p1.tar.gz" .
use_prebuilt T | tee -a "$LOG"
log "tests T (CUDA): rms_norm, adaln; wide-path knob settings"
timeout -s INT 150 python3 -m pytest -q -p no:cacheprovider -n 14 -rf \
  -k "cuda" tests/test_rms_norm.py tests/test_adaln.py > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
timeout -s INT 150 python3 -m pytest -q -p no:cacheprovider -rf -k "wide" \
  tests/test_stage_knobs.py > "$OUT/tests-knobs.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests-knobs.log" | tail -30 | tee -a "$LOG"
for tool in memcheck racecheck; do
  log "compute-sanitizer $tool: rms_norm, adaln, wide path at every grid"
  LTX_RMS_WIDE=1 LTX_ADALN_WIDE=1 LTX_GATED_WIDE=1 timeout 70 compute-sanitizer --tool $tool \
    python3 tools/sanitize_ops.py rms_norm adaln > "$OUT/sanitize-$tool.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|sanitize_ops:|Error" "$OUT/sanitize-$tool.log" | tail -5 | tee -a "$LOG"
done
log done
