#!/usr/bin/env bash
# Run V, device call 2, on V2 (rope.cu: the flat path, one item a thread, the default; the
# vector-a-thread variant removed; transposed q / k walked in memory order only where out keeps
# rows at strides) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - rope_qk and rope_qk_gqa ours and every peer, bf16 and fp16 (the table's rows)
#   - CUDA tests of rope / rope_qk at the defaults, and the flat path off (the heads and rows
#     paths, test_stage_knobs.py rope-flat-off)
#   - compute-sanitizer memcheck of the rope family at the defaults and with the flat path off
#   - LLaMA-8B prefill, the four configurations (three rounds)
#   - the CUDA integration tests (the LTX injection's direct processor calls, run U's changes
#     after its device calls)
#   - the knob tests rope-flat-index-order and rope-flat-rows64 (last: the call may end first)
# Files: $OUT/v2.log (summary), $OUT/v2.tar.gz (sweeps), $OUT/tests*.log, $OUT/sanitize*.log,
# $OUT/e2e.{log,json}.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start v2
use_prebuilt V2 | tee -a "$LOG"
peer_sweeps rope_qk,rope_qk_gqa "$W" 90 bf16 fp16
tar -C $W -czf "$OUT/v2.tar.gz" .
log "tests V2 (CUDA): rope and rope_qk at the defaults, then with the flat path off"
run_tests tests-rope 130 -n 16 -k "cuda and not rms_norm and not huge" tests/test_rope.py
run_tests tests-knobs 130 -k "rope-flat-off" tests/test_stage_knobs.py
SANITIZE_TOOLS=memcheck sanitize rope 60 rope
LTX_ROPE_FLAT=0 SANITIZE_TOOLS=memcheck sanitize rope-heads 60 rope
log "LLaMA-8B prefill (V2)"
PREBUILT=V2 PARTS=llama LLAMA_ARGS="--rounds 3 --iterations 5" timeout 100 \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms \(median|against|per round|GPU state|timeline|Error|FAILED" "$OUT/e2e.log" \
  | tee -a "$LOG"
log "tests V2 (CUDA): integrations"
run_tests tests-integrations 100 -n 8 -k cuda tests/test_integrations.py
log "tests V2 (CUDA): the flat path in index order, with 64-bit row offsets (to the call's end)"
run_tests tests-knobs2 130 -k "rope-flat-index-order or rope-flat-rows64" tests/test_stage_knobs.py
log done
