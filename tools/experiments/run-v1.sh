#!/usr/bin/env bash
# Run V, device call 1, on V1 (rope.cu: the flat path under LTX_ROPE_FLAT, off by default;
# the heads path's split-halves items no longer read or write a vector past the row's end)
# (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - rope_qk and rope_qk_gqa ours under the rope knobs, two rounds in alternating order, bf16:
#     the heads / rows paths (defaults), flat items, flat vectors (memory order, 32-bit rows;
#     128 and 256 threads), flat vectors in index order, flat vectors with 64-bit row offsets
#   - CUDA tests of rope / rope_qk at the defaults (the new one-vector-tail cases) and under
#     the flat settings (test_stage_knobs.py rope-flat-*)
#   - rms_norm ours and every peer, bf16, --rounds 3 (run U: Liger's time moved with what ran
#     before it)
# Files: $OUT/v1.log (summary), $OUT/v1.tar.gz (sweeps), $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start v1
use_prebuilt V1 | tee -a "$LOG"
log "rope knobs (V1)"
AB_DTYPES=bf16 AB_SWEEP_LIMIT=30 knob_ab rope_qk,rope_qk_gqa "$W/rope" "heads=" \
  "items=LTX_ROPE_FLAT=1" "vectors=LTX_ROPE_FLAT=2" \
  "vectors256=LTX_ROPE_FLAT=2,LTX_ROPE_FLAT_THREADS=256" \
  "vectors-index=LTX_ROPE_FLAT=2,LTX_ROPE_FLAT_ORDER=0" \
  "vectors-rows64=LTX_ROPE_FLAT=2,LTX_ROPE_FLAT_ROWS32=0" | tee -a "$LOG"
log "tests V1 (CUDA): rope and rope_qk at the defaults, then the flat knob settings"
run_tests tests-rope 80 -n 16 -k "cuda and not rms_norm and not huge" tests/test_rope.py
run_tests tests-knobs 130 -k "rope-flat-items or rope-flat-vectors" tests/test_stage_knobs.py
PEER_ARGS="--rounds 3" peer_sweeps rms_norm "$W" 90 bf16
tar -C $W -czf "$OUT/v1.tar.gz" .
log done
