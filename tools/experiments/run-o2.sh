#!/usr/bin/env bash
# Run O, device call 2, on P (6081972: pair tables) and Q (7aa9cb2: rms_norm_rope's cached path
# loads cos / sin with x, before the reduction) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - ours alone, P / Q / P / Q: rms_norm_rope_qk (per-sample and pair tables) and
#     rms_norm_rope at LTX's shapes, bf16 and fp16 (tools/ab_table.py, two runs a side)
#   - the CUDA tests of the rope ops and the LTX integration on Q
#   - LTX-Video 2B on the faster of P and Q at the 2x2688x2048 pair-table case: compile and
#     kernels + compile at their fastest settings (part best), then kernels + compile with
#     --skip-module-guards, each with 3 steps of the loop profiled
# Files: $OUT/o2.log (summary), $OUT/o2.tar.gz (sweeps), $OUT/tests.log, $OUT/e2e.log, e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/o2.log
W=/tmp/o2
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
prebuilt_ab P Q rms_norm_rope_qk,rms_norm_rope_qk_pairs,rms_norm_rope "$W" 2>&1 | tee -a "$LOG"
tar -C $W -czf "$OUT/o2.tar.gz" .
BEST=$(prebuilt_faster "$W/ab.md" rms_norm_rope_qk_pairs 2x2688x2048 bf16 P Q)
BEST=${BEST:-P}
log "faster at LTX's pair-table case: $BEST"
use_prebuilt Q | tee -a "$LOG"
log "tests Q (CUDA): rope, LTX integration"
timeout -s INT 150 python3 -m pytest -q -p no:cacheprovider -n 14 -rf \
  -k "cuda and (rope or ltx)" tests > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
log "LTX 2B on $BEST: part best, then kernels + compile --skip-module-guards"
PREBUILT=$BEST PARTS=best LTX_ARGS="--profile-loop 3" timeout ${O2_BEST_LIMIT:-240} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
PREBUILT=$BEST PARTS=best BEST_TAG=-skipguards COMPILED_KERNELS=use-optimized-kernels \
  LTX_ARGS="--profile-loop 3 --skip-module-guards" timeout ${O2_SKIP_LIMIT:-130} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
