#!/usr/bin/env bash
# Run T, device call 1: loads of data a kernel reads once with an evict-first cache policy
# (change 51, LTX_LOAD_ONCE in common/vec.cuh, a build-time define). Prebuilts (carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h): Y (run S's final source = LTX_LOAD_ONCE=0, plain
# loads), B (=1: ld.global.cs; the staged rows' cp.async with an L2 evict-first policy),
# C (=2: ld.global.L1::no_allocate with the L2 evict-first policy; the same cp.async).
#   - ours alone, bf16, the --quick shapes of every op (the sweep checks each case against
#     eager), Y B C Y B C on one lease; A/B tables Y->B and Y->C
#   - the same once with the L2 flushed by a read (clean lines) for Y and the faster variant
#   - LTX-Video 2B kernels + compile (fastest settings) on the faster variant, then on Y
# Files: $OUT/t1.log (summary), $OUT/t1.tar.gz (sweeps, A/B tables), $OUT/e2e.*.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start t1
sweep() {  # prebuilt, run name, sweep args...
  local pb=$1 name=$2; shift 2
  use_prebuilt "$pb" > /dev/null || return 1
  log "ours, $pb ($name) $*"
  timeout 60 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --quick "$@" \
    --out "$W/$name" 2>&1 | tail -1 | tee -a "$LOG"
}
for run in 1 2; do
  for pb in Y B C; do sweep $pb $pb$run; done
done
for v in B C; do
  log "A = Y (plain loads), B = $v"
  python3 tools/ab_table.py $W/Y1/sweep.csv $W/Y2/sweep.csv -- $W/${v}1/sweep.csv \
    $W/${v}2/sweep.csv | tee "$W/ab-$v.md" | tee -a "$LOG"
done
# the faster variant: the geometric mean of B / A over the cases
gm() { awk -F'|' 'NR > 2 && $7 + 0 > 0 { s += log($7); n++ } END { printf "%.4f", exp(s / n) }' "$1"; }
gb=$(gm "$W/ab-B.md"); gc=$(gm "$W/ab-C.md")
best=$(awk -v b="$gb" -v c="$gc" 'BEGIN { print (b <= c) ? "B" : "C" }')
log "geometric mean of time ratios: B $gb, C $gc -> $best"
sweep Y Yread --flush read
sweep $best ${best}read --flush read
log "A = Y, B = $best, L2 flushed by a read"
python3 tools/ab_table.py $W/Yread/sweep.csv -- $W/${best}read/sweep.csv \
  | tee "$W/ab-read.md" | tee -a "$LOG"
tar -C $W -czf "$OUT/t1.tar.gz" .
for pb in $best Y; do
  log "LTX 2B kernels + compile, fastest settings, on $pb"
  COMPILED_KERNELS=use-optimized-kernels BEST_TAG=-$pb e2e_best $pb "${T1_E2E_LIMIT:-130}"
done
log done
