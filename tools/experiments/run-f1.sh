#!/usr/bin/env bash
# Queued for the next device session (not run yet): two experiments, each timed against the
# tree (ours only, bf16, every shape of the full table for its ops) with its op family's CUDA
# tests on the patched build:
#   rms_norm_preload_one_wave.patch  the weight loaded with the row in one-wave grids
#   rope_split_half_width.patch      rope's split-halves items with 8-byte accesses
# Logs: $OUT/ab.log (both). About 9 minutes with the builds; each has its own limit.
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
for v in rms_norm_preload_one_wave:rms_norm,fused_add_rms_norm:tests/test_rms_norm.py \
         rope_split_half_width:rope_qk:tests/test_rope.py; do
  IFS=: read -r name ops tests <<<"$v"
  echo "== $name ($(date +%T))" | tee -a "$OUT/ab.log"
  OUT=$OUT/$name AB_PATCH=tools/experiments/$name.patch AB_OPS=$ops AB_TESTS=$tests \
    AB_SWEEP_ARGS="--dtypes bf16" timeout 290 bash tools/gpu_ab.sh
  cat "$OUT/$name/ab.log" >> "$OUT/ab.log"
  rm -rf "$OUT/$name/ab-A/sweep.png" "$OUT/$name/ab-B/sweep.png"
done
