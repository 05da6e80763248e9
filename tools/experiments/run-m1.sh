#!/usr/bin/env bash
# Run M, device call 1, on J (run L's last build) and M (J + one-instruction 16-byte global
# stores, store_vec in common/vec.cuh; gated_residual knobs LTX_GATED_RESIDUAL_VECS /
# _MIN_BLOCKS) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the CUDA tests of what is new (linear_gelu_tanh, DiffusersGELUInMatmul, the LTX injection
#     with gelu_in_matmul) and of gated_residual, on M
#   - A/B J, M, J, M: our kernels alone, every op's --quick shapes, bf16
#   - gated_residual on M under six knob settings (every shape, bf16), then against its peers
#   - ncu: gated_residual (ours and torch.compile's), gelu_tanh (ours), M
#   - the LTX feed-forward's projection + GELU four ways (tools/experiments/linear_gelu_m1.py)
# Few files come back: $OUT/m1.log, $OUT/m1.tar.gz, the ncu summary.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/m1.log
W=/tmp/m1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt M | tee -a "$LOG"
log "tests M (CUDA): linear_gelu_tanh, gelu in matmul, gated_residual, activation ops"
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 14 -rf tests/test_activation.py \
  tests/test_adaln.py tests/test_integrations.py \
  -k "cuda and (linear_gelu or in_matmul or gated_residual or gelu or silu or geglu)" 2>&1 \
  | grep -E "passed|failed|FAILED|Error" | tail -30 | tee -a "$LOG"
OPS=$(python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import sweep; print(','.join(sweep.TABLE))")
for b in J M J M; do
  use_prebuilt $b > /dev/null
  log "A/B $b: ours, --quick, bf16"
  timeout 90 python3 benchmarks/sweep.py --quick --dtypes bf16 --impls ltx --ops "$OPS" \
    --out "$W/ab-$b-$(date +%s)" 2>&1 | tail -1 | tee -a "$LOG"
done
python3 - "$W" <<'PY' | tee -a "$LOG"
import csv, sys, glob, statistics as st
from collections import defaultdict
t = defaultdict(lambda: defaultdict(list))
for d in sorted(glob.glob(sys.argv[1] + "/ab-*")):
    b = d.split("/ab-")[1].split("-")[0]
    for r in csv.DictReader(open(d + "/sweep.csv")):
        if r["impl"] == "ltx":
            t[(r["op"], r["shape"])][b].append(float(r["us"]))
print("op | shape | J us (2 runs) | M us (2 runs) | M/J")
for (op, shape), v in t.items():
    j, m = st.mean(v["J"]), st.mean(v["M"])
    print(f"{op} | {shape} | {' '.join(f'{x:.1f}' for x in v['J'])} | "
          f"{' '.join(f'{x:.1f}' for x in v['M'])} | {m / j:.3f}")
PY
use_prebuilt M > /dev/null
for s in 2:1 1:1 4:1 1:4 2:4 4:4; do
  log "gated_residual M, LTX_GATED_RESIDUAL_VECS=${s%%:*} MIN_BLOCKS=${s##*:}"
  LTX_GATED_RESIDUAL_VECS=${s%%:*} LTX_GATED_RESIDUAL_MIN_BLOCKS=${s##*:} timeout 60 \
    python3 benchmarks/sweep.py --dtypes bf16 --impls ltx --ops gated_residual \
    --out "$W/gr-${s/:/-}" 2>&1 | tail -1 | tee -a "$LOG"
  python3 -c "
import csv; print(' '.join(f\"{r['shape']}:{float(r['us']):.1f}\" for r in csv.DictReader(open('$W/gr-${s/:/-}/sweep.csv'))))" | tee -a "$LOG"
done
log "gated_residual M (default knobs) against its peers, bf16 and fp16"
timeout 90 python3 benchmarks/sweep.py --ops gated_residual --out "$W/gr-peers" 2>&1 | tail -1 \
  | tee -a "$LOG"
cat "$W/gr-peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/m1.tar.gz" .
log "ncu M: gated_residual (ours, compile), gelu_tanh (ours)"
NCU_CASES="gated_residual:2x2688x2048 gelu_tanh:2x2688x8192" PREBUILT=M PARTS=ncu timeout 150 \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
grep -A12 "ncu" "$OUT/e2e.log" | grep "|" | tee -a "$LOG"
grep -E "^  [a-z_]+(_kernel|triton)|Warp Cycles Per Issued|Stall|Achieved Occupancy|Memory Throughput|L1/TEX Hit|L2 Hit|Registers Per|Theoretical Occ|DRAM Throughput|Duration|Mem Busy|Max Bandwidth|LSU|Block Limit" \
  "$OUT/ncu-details.txt" | head -120 >> "$LOG"
rm -f "$OUT/ncu.ncu-rep"
log "LTX feed-forward projection + GELU, four ways"
timeout 90 python3 tools/experiments/linear_gelu_m1.py 2>&1 | grep -v Warning | tee -a "$LOG"
tar -C $W -czf "$OUT/m1.tar.gz" .
log done
