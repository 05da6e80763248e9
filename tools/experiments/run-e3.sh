#!/usr/bin/env bash
# Run E, device call 3: the kernels as committed (the activation bound now on bf16 only): build,
# the activation CUDA tests (the families changed since call 2), compute-sanitizer over the op
# families changed in run E, then the quick sweep with every peer, bf16 then fp16, into
# $OUT/sweep-bf16 and $OUT/sweep-fp16. Log: $OUT/e3.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
log() { echo "== $* ($(date +%T))" | tee -a "$OUT/e3.log"; }
log build
python3 tools/build.py --backends cuda,cpu -j 16 2>&1 | tail -1 | tee -a "$OUT/e3.log"
log tests
timeout 120 python3 -m pytest -q -p no:cacheprovider -n 16 -k cuda tests/test_activation.py \
  2>&1 | tail -2 | tee -a "$OUT/e3.log"
for tool in memcheck racecheck; do
  log "sanitize $tool"
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 \
    python3 tools/sanitize_ops.py adaln rms_norm rope activation 2>&1 | tail -3 | tee -a "$OUT/e3.log"
done
for dt in bf16 fp16; do
  log "sweep $dt"
  timeout ${SWEEP_TIMEOUT:-240} python3 benchmarks/sweep.py --quick --dtypes $dt \
    --out "$OUT/sweep-$dt" 2>&1 | grep "^\[" | tail -40 >> "$OUT/e3.log"
done
log done
