#!/usr/bin/env bash
# Superseded: run G ran these (run-g1.sh, PERFORMANCE.md changes 19-20). Was: one experiment per device call, timed
# against the tree (ours only, bf16, every shape of the full table for its ops) with its op
# family's CUDA tests on the patched build (tools/gpu_ab.sh). Log: $OUT/ab.log.
#   bash tools/experiments/run-f1.sh preload_one_wave       # RMSNorm's weight / AdaLN's scale
#                                                          # and shift loaded with the row in
#                                                          # one-wave grids (~8 min: two builds)
#   bash tools/experiments/run-f1.sh rope_split_half_width  # rope's split-halves items with
#                                                          # 8-byte accesses (~5 min)
set -uo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
  preload_one_wave)
    ops=rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln
    tests="tests/test_rms_norm.py tests/test_adaln.py" ;;
  rope_split_half_width)
    ops=rope_qk
    tests=tests/test_rope.py ;;
  *) echo "usage: $0 preload_one_wave|rope_split_half_width" >&2; exit 2 ;;
esac
AB_PATCH=tools/experiments/$1.patch AB_OPS=$ops AB_TESTS=$tests AB_SWEEP_ARGS="--dtypes bf16" \
  timeout 570 bash tools/gpu_ab.sh
