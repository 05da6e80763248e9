#!/usr/bin/env bash
# Run L, device call 3 (the last), on J: I with LTX_NORM_ROPE_LOADS [2] as the default and
# gated_residual at 2 vectors a thread (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - tools/experiments/debug_l3.py: the compiled tiny LTX model against eager, uninjected,
#     injected and with one op at a time back to its torch formula (the CUDA failure of
#     test_ltx_compile_fullgraph in calls 1 and 2)
#   - the CUDA tests of what changed (rms_norm_rope ops, gated_residual, the LTX integration)
#   - the changed ops against their peers (bf16): rms_norm_rope, rms_norm_rope_qk (+ shared
#     tables), gated_residual
#   - LTX-Video 2B end to end, every configuration in one process (gpu_e2e part ltx), then
#     kernels + compile with --freeze and CUDA graphs
# Few files come back: $OUT/l3.log, $OUT/l3.tar.gz, e2e.log / e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/l3.log
W=/tmp/l3
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
use_prebuilt J || exit 1
log "debug_l3: compiled vs eager, tiny LTX, fp32, CUDA"
timeout 90 python3 tools/experiments/debug_l3.py cuda 2>&1 | grep -E "compiled vs|FAILED" \
  | tee -a "$LOG"
log "tests J (CUDA): rms_norm_rope ops, gated_residual, LTX integration"
timeout 90 python3 -m pytest -q -p no:cacheprovider -n 14 tests/test_rope.py tests/test_adaln.py \
  tests/test_integrations.py -k "cuda and (rms_norm_rope or shared or gated_residual or ltx)" \
  2>&1 | tail -4 | tee -a "$LOG"
log "sweep J: changed ops, every peer"
timeout 90 python3 benchmarks/sweep.py --dtypes bf16 \
  --ops rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared,gated_residual --out "$W/J-peers" \
  2>&1 | tail -1 | tee -a "$LOG"
cat "$W/J-peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/l3.tar.gz" .
log "e2e ltx on J"
PREBUILT=J PARTS=ltx timeout 200 bash tools/gpu_e2e.sh > /dev/null 2>&1
use_prebuilt J > /dev/null
timeout 95 python3 scripts/benchmark_example.py --num-frames 49 --height 512 --width 768 \
  --batch-size 1 --cfg --steps 10 --warmup-iterations 2 --no-progress --compile --freeze \
  --compile-mode reduce-overhead --profile --baseline-json /tmp/ltx-e2e-runs/ltx2b.json \
  --json "$W/ltx2b-freeze-cg-use.json" 2>&1 | grep -v "^WARNING" >> "$OUT/e2e.log"
grep -E "^==|ms/step|timeline|host-bound|against|eager |compile |kernels" "$OUT/e2e.log" \
  | tail -50 | tee -a "$LOG"
tar -C $W -czf "$OUT/l3.tar.gz" .
log done
