#!/usr/bin/env bash
# Run K, device call 4 (114 s; the command as it ran, one line there): on G, two of
# tests/test_stage_knobs.py's settings by hand, since call 3 cut that file at 230 s: the
# gated tests with the shipped gated path at every grid, and the reference tests of rms_norm
# and adaln with every op staged in groups of up to 256 at one vector a thread. Carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h. Output: the run's reply only.
source tools/gpu_env.sh >/dev/null 2>&1
source tools/gpu_prebuilt.sh
use_prebuilt G >/dev/null
S="cuda and not misaligned and (gated or rows_per_block or ltx)"
echo "== G defaults, gated staged at every grid"
LTX_GATED_STAGE=1 LTX_GATED_STAGE_MAX_VEC=1000000 timeout 60 python3 -m pytest -q \
  -p no:cacheprovider -n 14 -k "$S" tests/test_adaln.py 2>&1 | grep -E "passed|failed|FAILED" \
  | tail -4
echo "== several warps (groups to 256, 1 vector a thread), every grid, reference tests"
LTX_STAGE=1 LTX_ADALN_STAGE=1 LTX_GATED_STAGE=1 LTX_STAGE_MAX_VEC=1000000 \
  LTX_ADALN_STAGE_MAX_VEC=1000000 LTX_GATED_STAGE_MAX_VEC=1000000 LTX_STAGE_MAX_GROUP=256 \
  LTX_ADALN_STAGE_MAX_GROUP=256 LTX_GATED_STAGE_MAX_GROUP=256 LTX_STAGE_VEC=1 timeout 75 \
  python3 -m pytest -q -p no:cacheprovider -n 14 -k "cuda and not misaligned and reference" \
  tests/test_rms_norm.py tests/test_adaln.py 2>&1 | grep -E "passed|failed|FAILED" | tail -4
echo end
# Output (2026-12-01): "440 passed in 40.65s", "1056 passed in 61.37s (0:01:01)".
