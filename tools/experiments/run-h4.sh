#!/usr/bin/env bash
# Run H, device call 4, on one build (.prebuilt/hb4.tar.xz: the kept kernels plus a rope heads
# instance that loads 4 heads at once; carry [".whl-h", ".prebuilt"]), ours only, bf16:
#   - the rope heads path's knobs: LTX_ROPE_HEADS_BATCH 2 (default) / 4, heads per thread 4 / 8
#   - the row kernels' knobs over every full-table shape of RMSNorm and AdaLN (vectors per
#     thread : block threads; 4:256 is the default)
#   - Nsight Compute (detailed set) on the cases that still trail a peer: ours, compile's and
#     Liger's kernels
# Few files come back from a lease: $OUT/h4.log and $OUT/h4.tar.gz (CSVs, ncu report and text).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/h4.log
W=/tmp/h4
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
NORM=rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln
ROPE=rope_qk,rope_qk_gqa
sweep() {  # name ops; the environment's knobs apply
  log "sweep $1: $2 $(env | grep -o '^LTX_[A-Z_]*=[^ ]*' | tr '\n' ' ')"
  timeout 150 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops "$2" --out "$W/$1" \
    2>&1 | tail -1 | tee -a "$LOG"
}
use_prebuilt hb4 || exit 1
sweep base "$NORM,$ROPE"
LTX_ROPE_HEADS_BATCH=4 sweep hb4 "$ROPE"
LTX_ROPE_HEADS_BATCH=4 LTX_ROPE_HEADS_PER_THREAD=8 sweep hb4-hpt8 "$ROPE"
LTX_ROPE_HEADS_PER_THREAD=8 sweep hpt8 "$ROPE"
for s in 2:256 8:256 4:128 4:512; do
  LTX_VEC_PER_THREAD=${s%%:*} LTX_BLOCK_THREADS=${s##*:} sweep "vec-${s/:/-}" "$NORM"
done
sweep base2 "$NORM,$ROPE"
tar -C $W -czf "$OUT/h4.tar.gz" .
for b in base2 hb4 hb4-hpt8 hpt8 vec-2-256 vec-8-256 vec-4-128 vec-4-512; do
  log "base -> $b (B / A < 1: $b faster)"
  python3 tools/ab_table.py "$W/base/sweep.csv" "$W/$b/sweep.csv" | tee -a "$LOG"
done
log "ncu"
NCU_IMPLS=ltx,compile,liger timeout 200 ncu --clock-control none --nvtx --nvtx-include "prof/" \
  --set detailed -o $W/ncu -f python3 tools/ncu_ops.py rms_norm:1x4096x2048 \
  rms_norm:2x2688x2048 adaln:2x2688x2048 rope_qk:1x32x4096x128 rope_qk_gqa:1x4096x32x8x128 \
  2>&1 | grep -v "^==PROF==" | tail -12 | tee -a "$LOG"
ncu --import $W/ncu.ncu-rep --page details > $W/ncu-details.txt 2>&1
ncu --import $W/ncu.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,smsp__inst_executed.sum,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,l1tex__t_bytes.sum \
  > $W/ncu-summary.csv 2>&1
python3 - $W/ncu-summary.csv <<'PY' | tee -a "$LOG"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if hdr is None:
    print(open(sys.argv[1]).read()[-2000:]); sys.exit()
h = rows[hdr]
cols = [c for c in h if "__" in c] 
idx = [h.index("Kernel Name")] + [h.index(c) for c in cols]
print(" | ".join(["kernel"] + [c.split("__")[1][:28] for c in cols]))
for r in rows[hdr + 2:]:
    if len(r) == len(h):
        print(" | ".join(r[i][:50] for i in idx))
PY
tar -C $W -czf "$OUT/h4.tar.gz" .
log done
