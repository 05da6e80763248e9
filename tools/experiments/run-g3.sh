#!/usr/bin/env bash
# Run G, device call 3, on the kernels kept after call 1 (.prebuilt/$1.tar.xz, carried): the
# full shape table in fp16 with every peer; bf16 with every peer for the ops in $2 (those whose
# kernels changed in call 1, and the shapes run E did not reach); then the model, integration
# and script tests on CUDA. Sweeps write their CSV as they go, so a cut one keeps its cases.
#   bash tools/experiments/run-g3.sh A adaln_per_token,rms_norm_rope,rms_norm_rope_qk
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/g3.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
use_prebuilt "${1:?usage: $0 PREBUILT_NAME BF16_OPS}" | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
log "sweep fp16, full table, every peer"
timeout "${FP16_LIMIT:-260}" python3 benchmarks/sweep.py --dtypes fp16 --out /tmp/g3-fp16 2>&1 \
  | grep -e "^\[" -e "^#" -e "rror" | tee -a "$LOG"
log "sweep bf16: ${2:?}"
timeout "${BF16_LIMIT:-150}" python3 benchmarks/sweep.py --dtypes bf16 --ops "$2" \
  --out /tmp/g3-bf16 2>&1 | grep -e "^\[" -e "^#" -e "rror" | tee -a "$LOG"
for d in fp16 bf16; do
  cp /tmp/g3-$d/sweep.csv "$OUT/g3-$d.csv"; cp /tmp/g3-$d/sweep.md "$OUT/g3-$d.md"
done
cp /tmp/g3-fp16/sweep.png "$OUT/sweep-fp16.png"
log "tests: models, integrations, scripts on CUDA"
timeout "${TEST_LIMIT:-200}" python3 -m pytest -q -p no:cacheprovider -n 12 --tb=short \
  tests/test_models.py tests/test_integrations.py tests/test_scripts.py 2>&1 \
  | grep -v "^SKIPPED" | tail -30 | tee -a "$LOG"
log "tests: rope on CUDA (run G call 1 saw 13 failures with the device's own transformers)"
timeout "${ROPE_LIMIT:-90}" python3 -m pytest -q -p no:cacheprovider -n 12 --tb=line -k cuda \
  tests/test_rope.py 2>&1 | grep -v "^SKIPPED" | tail -20 | tee -a "$LOG"
log done
