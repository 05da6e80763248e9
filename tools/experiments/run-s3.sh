#!/usr/bin/env bash
# Run S, device call 3, on Y (the activations' flat kernel for every activation by default,
# LTX_ACT_FLAT=2, as call 2 chose) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - CUDA tests: the activations at the defaults and the back-to-back chains; the knob tests
#     of the row kernel only (call 2's was cut by its limit) and the flat kernel for the gated
#     ops only
#   - the activations with every peer, bf16 and fp16, at the defaults (the table's rows)
# Files: $OUT/s3.log (summary), $OUT/s3.tar.gz (sweeps), $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start s3
use_prebuilt Y | tee -a "$LOG"
log "tests Y (CUDA): activations, launch chains"
run_tests tests 90 -n 16 -k cuda tests/test_activation.py tests/test_launch.py
log "knob tests: the activations' row kernel only, the flat kernel for the gated ops only"
LTX_KNOB_TEST_WORKERS=16 run_tests tests-knobs 150 -v -k "act" tests/test_stage_knobs.py
OPS=gelu_tanh,geglu,silu_and_mul
for dt in bf16 fp16; do
  log "$OPS: ours (defaults) and every peer, $dt"
  timeout 70 python3 benchmarks/sweep.py --dtypes $dt --ops $OPS --out "$W/peers-$dt" 2>&1 \
    | tail -1
  grep -E "^\| (gelu_tanh|geglu|silu_and_mul) " "$W/peers-$dt/sweep.md" | tee -a "$LOG"
done
tar -C $W -czf "$OUT/s3.tar.gz" .
log done
