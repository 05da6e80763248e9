#!/usr/bin/env bash
# Run O, device call 1, on P (6081972: pair tables for rms_norm_rope / rms_norm_rope_qk; the
# LTX injection passes one sample's pair tables, [1, S, D/2], eagerly and under torch.compile)
# (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - rms_norm_rope_qk at LTX's shapes with per-sample full tables, one sample's expanded and
#     one sample's pair tables, against their peers (bf16)
#   - the CUDA tests of the rope ops (pair tables included), the integrations (the compiled
#     LTX model against its eager self: where inductor's handling of expanded tables failed in
#     run L) and the benchmarks
#   - LTX-Video 2B: kernels + compile and compile at their fastest settings (part best), one
#     step profiled and 3 steps of the loop profiled
# Files: $OUT/o1.log (summary), $OUT/o1.tar.gz (sweep), $OUT/tests.log, $OUT/e2e.log, e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/o1.log
W=/tmp/o1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt P | tee -a "$LOG"
log "rms_norm_rope_qk: per-sample, shared (expanded), pair tables; peers; bf16"
timeout 150 python3 benchmarks/sweep.py --dtypes bf16 \
  --ops rms_norm_rope_qk,rms_norm_rope_qk_shared,rms_norm_rope_qk_pairs --out "$W/qk" 2>&1 \
  | tail -1 | tee -a "$LOG"
cat "$W/qk/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/o1.tar.gz" .
log "tests P (CUDA): rope, integrations, benchmarks"
timeout -s INT 200 python3 -m pytest -q -p no:cacheprovider -n 14 -rf \
  -k "cuda and (rope or integrations or benchmarks)" tests \
  > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
log "LTX 2B, part best (compile, kernels + compile), loop profiled"
PREBUILT=P PARTS=best LTX_ARGS="--profile-loop 3" timeout ${O1_E2E_LIMIT:-260} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|host-bound|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
