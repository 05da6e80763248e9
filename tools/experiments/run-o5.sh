#!/usr/bin/env bash
# Run O, device call 5, on P (6081972) and S (101cb5b: rms_norm_rope's row index from a FastDiv,
# q's and k's sums in one reduction) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - ours alone, P / S / P / S: rms_norm_rope_qk (per-sample and pair tables) and
#     rms_norm_rope at LTX's shapes, bf16 and fp16
#   - the CUDA tests of the rope ops and the LTX integration on S
#   - if S is the faster at LTX's pair-table case: LTX-Video 2B kernels + compile at its
#     fastest settings on S
# Files: $OUT/o5.log (summary), $OUT/o5.tar.gz (sweeps), $OUT/tests.log, $OUT/e2e.log, e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/o5.log
W=/tmp/o5
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
AB_SWEEP_LIMIT=50 prebuilt_ab P S rms_norm_rope_qk,rms_norm_rope_qk_pairs,rms_norm_rope "$W" 2>&1 | tee -a "$LOG"
tar -C $W -czf "$OUT/o5.tar.gz" .
FASTER=$(prebuilt_faster "$W/ab.md" rms_norm_rope_qk_pairs 2x2688x2048 bf16 P S)
log "faster at LTX's pair-table case: ${FASTER:-?}"
use_prebuilt S | tee -a "$LOG"
log "tests S (CUDA): rope, LTX integration"
timeout -s INT 140 python3 -m pytest -q -p no:cacheprovider -n 14 -rf \
  -k "cuda and (rope or ltx)" tests > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
if [[ ${FASTER:-} == S ]]; then
  log "LTX 2B on S: kernels + compile, fastest settings"
  PREBUILT=S PARTS=best COMPILED_KERNELS=use-optimized-kernels LTX_ARGS="--profile-loop 3" \
    timeout ${O5_E2E_LIMIT:-125} bash tools/gpu_e2e.sh > /dev/null 2>&1
  echo "gpu_e2e rc $?" | tee -a "$LOG"
  grep -E "^==|ms/step|over the loop|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|TOO LARGE|FAILED|Error" \
    "$OUT/e2e.log" | tee -a "$LOG"
fi
log done
