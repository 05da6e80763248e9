#!/usr/bin/env bash
# Run H, device call 2: the kept kernels of call 1 (RMSNorm's one-vector small grids, the rope
# heads path; .prebuilt/final.tar.xz, built on the development machine, carry [".whl-h",
# ".prebuilt"]): the CUDA tests of the op families they touch, then the full-table shapes of
# the changed ops with every peer, bf16 then fp16. Few files come back from a lease, so the
# sweeps travel as one archive: $OUT/h2.log, $OUT/h2.tar.gz (sweep-bf16/, sweep-fp16/).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/h2.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
OPS=${OPS:-rms_norm,fused_add_rms_norm,rope_qk,rope_qk_gqa}
use_prebuilt final || exit 1
log "tests: -k cuda test_rope test_rms_norm test_adaln"
timeout "${TEST_LIMIT:-260}" python3 -m pytest -q -p no:cacheprovider -n 14 -k cuda \
  tests/test_rope.py tests/test_rms_norm.py tests/test_adaln.py 2>&1 | grep -v "^SKIPPED" \
  | tail -15 | tee -a "$LOG"
mkdir -p /tmp/h2
for dt in bf16 fp16; do
  log "sweep $dt: $OPS, every peer"
  timeout "${SWEEP_LIMIT:-170}" python3 benchmarks/sweep.py --dtypes $dt --ops "$OPS" \
    --out /tmp/h2/sweep-$dt 2>&1 | tail -3 | tee -a "$LOG"
  tar -C /tmp/h2 -czf "$OUT/h2.tar.gz" .
done
log done
