#!/usr/bin/env bash
# Run W, device call 1, on W0 (520659c, run V's final source; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h):
#   - the rope CUDA tests at the defaults, test_rope_qk_random_views included (added after run
#     V's device calls: its CUDA half never ran), and the host changes after run V
#     (dispatch_bool, rope_tables recomputed after the memory-order permutation)
#   - the CUDA integration tests (diffusers / transformers)
#   - Nsight Compute, full set, ours against torch.compile (and Liger for RMSNorm) where the
#     table has ours behind: gated_residual 2x2688x2048 and 1x1024x2048 (0.95-0.97x compile),
#     rope_qk 1x32x1024x128 (0.91x), rms_norm 1x1024x4096 (0.86x)
# At most 8 files come back: $OUT/w1.log (summary) and $OUT/w1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start w1
use_prebuilt W0 | tee -a "$LOG"
log "rope CUDA tests (W0)"
run_tests tests-rope 200 -n 16 -k "cuda and not huge" tests/test_rope.py
log "integration CUDA tests (W0)"
run_tests tests-integrations 200 -n 8 -k "cuda" tests/test_integrations.py
log "Nsight Compute: gated_residual, rope_qk, rms_norm against compile / Liger"
NCU_IMPLS=ltx,compile,liger NCU_LIMIT=240 ncu_full gated_residual:2x2688x2048 \
  gated_residual:1x1024x2048 rope_qk:1x32x1024x128 rms_norm:1x1024x4096
experiment_end
