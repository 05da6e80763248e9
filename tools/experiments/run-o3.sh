#!/usr/bin/env bash
# Run O, device call 3, on P (6081972: pair tables) and R (18452e7: rms_norm_rope's one-item
# interleaved rows held to 6 blocks a SM on sm_90) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - ours alone, P / R / P / R: rms_norm_rope_qk (per-sample and pair tables) at LTX's shapes,
#     and rms_norm_rope (not affected: the control), bf16 and fp16
#   - on the faster of P and R at LTX's pair-table case: the CUDA tests not run on P / Q in
#     calls 1-2 (RMSNorm, activations, models, stage knobs) and the rope tests again, then
#     compute-sanitizer memcheck and racecheck over the rope family (pair tables included)
# Files: $OUT/o3.log (summary), $OUT/o3.tar.gz (sweeps), $OUT/tests.log, $OUT/sanitize-*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/o3.log
W=/tmp/o3
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
prebuilt_ab P R rms_norm_rope_qk,rms_norm_rope_qk_pairs,rms_norm_rope "$W" 2>&1 | tee -a "$LOG"
tar -C $W -czf "$OUT/o3.tar.gz" .
BEST=$(prebuilt_faster "$W/ab.md" rms_norm_rope_qk_pairs 2x2688x2048 bf16 P R)
BEST=${BEST:-P}
log "faster at LTX's pair-table case: $BEST"
use_prebuilt $BEST | tee -a "$LOG"
log "tests $BEST (CUDA): rope, rms_norm, activation, models, stage knobs"
timeout -s INT 200 python3 -m pytest -q -p no:cacheprovider -n 14 -rf \
  -k "cuda and (rope or rms_norm or activation or models or stage_knobs)" tests \
  > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
for tool in memcheck racecheck; do
  log "compute-sanitizer $tool, rope family, $BEST"
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 9 python3 tools/sanitize_ops.py rope \
    > "$OUT/sanitize-$tool.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  tail -3 "$OUT/sanitize-$tool.log" | tee -a "$LOG"
done
log done
