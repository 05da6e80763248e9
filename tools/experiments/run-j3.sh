#!/usr/bin/env bash
# Run J, device call 3, on D (C with the gated kernel's staged path off by default:
# LTX_GATED_STAGE [0]; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - D's CUDA tests of adaln and of the op families that last ran on the GPU before
#     930bfa4 / 92f6912 (rope incl. the fused norm + rope ops, activations)
#   - gated_residual_adaln against every peer in bf16 (the register path again), then the
#     three AdaLN ops against every peer in fp16
#   - LTX-Video 2B end to end (gpu_e2e.sh part ltx), last, so that a cut loses only it
# Few files come back: $OUT/j3.log, $OUT/j3.tar.gz and gpu_e2e's e2e.log / e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/j3.log
W=/tmp/j3
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
use_prebuilt D || exit 1
log "tests D: adaln, rope, activation"
timeout 210 python3 -m pytest -q -p no:cacheprovider -n 14 -k cuda tests/test_adaln.py \
  tests/test_rope.py tests/test_activation.py 2>&1 | grep -v "^SKIPPED" | tail -5 | tee -a "$LOG"
sweep() {  # name dtype ops
  log "sweep $1: $2 $3, every peer"
  timeout 90 python3 benchmarks/sweep.py --dtypes "$2" --ops "$3" --out "$W/$1" 2>&1 | tail -1 \
    | tee -a "$LOG"
  tar -C $W -czf "$OUT/j3.tar.gz" .
}
sweep D-gated-bf16 bf16 gated_residual_adaln
sweep D-adaln-fp16 fp16 adaln,adaln_per_token,gated_residual_adaln
PREBUILT=D PARTS=ltx timeout 170 bash tools/gpu_e2e.sh > /dev/null 2>&1
grep -E "ms/step|per step|against|device|eager|compile|kernels" "$OUT/e2e.log" | tail -14 \
  | tee -a "$LOG"
tar -C $W -czf "$OUT/j3.tar.gz" .
log done
