#!/usr/bin/env bash
# Run L, device call 4 (short): the fix of call 3's finding on J's kernels (the injection now
# keeps the rope module's own tables under torch.compile; Python only, so J's extension
# stands): debug_l3.py's first variant (the injected tiny LTX model compiled against eager,
# fp32, CUDA) and the LTX integration CUDA tests, the compiled ones included.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/l4.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
use_prebuilt J || exit 1
log "debug_l3 (first variant): compiled vs eager, tiny LTX, fp32, CUDA"
timeout 50 python3 tools/experiments/debug_l3.py cuda 1 2>&1 | grep -E "compiled vs|FAILED" \
  | tee -a "$LOG"
log "tests J (CUDA): the LTX / FLUX integration"
timeout 110 python3 -m pytest -q -p no:cacheprovider -n 8 -rf tests/test_integrations.py \
  -k cuda 2>&1 | grep -E "passed|failed|^FAILED" | tail -8 | tee -a "$LOG"
log done
