#!/usr/bin/env bash
# Run BB, device call 3, on B1 (its defaults are HEAD's kernels; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h). Call 2: the output's address does not decide RMSNorm's gap (ours and Liger
# writing to the same views at 12 offsets: within 1.5%), and in a process of the two alone
# Liger takes 17.5 us at 2x2688x2048 where the table's sweep of every peer gives it 15.8-16.0.
# Which other implementation in the process makes Liger faster? benchmarks/sweep.py at two
# shapes with Liger and one other implementation a process (and every peer, and Liger alone),
# 2 rounds each, in one order and then again for the first and last set.
# Files: $OUT/bb3.log, $OUT/bb3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start bb3
use_prebuilt B1 | tee -a "$LOG"
n=0
for impls in liger ltx,liger compile,liger eager,liger F.rms_norm,liger \
  ltx,eager,F.rms_norm,compile,liger liger ltx,eager,F.rms_norm,compile,liger; do
  n=$((n + 1))
  fits 40 || break
  log "set $n: $impls"
  timeout 60 python3 benchmarks/sweep.py --ops rms_norm --shapes 2x2688x2048,1x4096x4096 \
    --dtypes bf16 --rounds 2 --impls "$impls" --out "$W/set$n" 2>&1 | tail -1
  grep -E "^\| rms_norm" "$W/set$n/sweep.md" | head -2 | tee -a "$LOG"
  awk -F, -v s="$n" '$1 == "rms_norm" { print "set " s ": " $2 " " $4 " " $5 }' \
    "$W/set$n/sweep.csv" | tee -a "$LOG"
done
tar -C "$W" -czf "$OUT/sets.tar.gz" .
experiment_end
