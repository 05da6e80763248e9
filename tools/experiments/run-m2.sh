#!/usr/bin/env bash
# Run M, device call 2, on N (M with gated_residual's flat kernel for dense tensors, the row
# kernel's knobs gone) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - gated_residual: the flat kernel against the row kernel (LTX_GATED_RESIDUAL_FLAT=0), ours
#     alone, twice each, bf16 and fp16; then against its peers
#   - the whole test suite on CUDA (every test file, slow ones included); interrupted with
#     SIGINT at its limit, so that pytest still prints the summary of what ran
#   - compute-sanitizer memcheck and racecheck over tools/sanitize_ops.py (every op family)
# Few files come back: $OUT/m2.log, $OUT/m2.tar.gz, $OUT/tests.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/m2.log
W=/tmp/m2
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt N | tee -a "$LOG"
for f in 1 0 1 0; do
  log "gated_residual N, LTX_GATED_RESIDUAL_FLAT=$f, ours"
  LTX_GATED_RESIDUAL_FLAT=$f timeout 60 python3 benchmarks/sweep.py --impls ltx \
    --ops gated_residual --out "$W/gr-flat$f-$(date +%s)" 2>&1 | tail -1 | tee -a "$LOG"
done
python3 - "$W" <<'PY' | tee -a "$LOG"
import csv, sys, glob, statistics as st
from collections import defaultdict
t = defaultdict(lambda: defaultdict(list))
for d in sorted(glob.glob(sys.argv[1] + "/gr-flat*")):
    f = d.split("/gr-flat")[1][0]
    for r in csv.DictReader(open(d + "/sweep.csv")):
        t[(r["shape"], r["dtype"])][f].append(float(r["us"]))
print("shape | dtype | row kernel us (2 runs) | flat us (2 runs) | flat / row")
for (shape, dt), v in t.items():
    print(f"{shape} | {dt} | {' '.join(f'{x:.1f}' for x in v['0'])} | "
          f"{' '.join(f'{x:.1f}' for x in v['1'])} | {st.mean(v['1']) / st.mean(v['0']):.3f}")
PY
log "gated_residual N against its peers, bf16 and fp16"
timeout 90 python3 benchmarks/sweep.py --ops gated_residual --out "$W/gr-peers" 2>&1 | tail -1 \
  | tee -a "$LOG"
cat "$W/gr-peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/m2.tar.gz" .
log "tests N (CUDA): the whole suite"
timeout -s INT 300 python3 -m pytest -q -p no:cacheprovider -n 14 -rf tests -k cuda \
  > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
log "compute-sanitizer N: memcheck, racecheck"
PREBUILT=N PARTS=sanitize timeout 200 bash tools/gpu_e2e.sh > /dev/null 2>&1
grep -E "^== sanitize|ERROR SUMMARY|RACECHECK SUMMARY|sanitize_ops:|FAILED" "$OUT/e2e.log" \
  | tee -a "$LOG"
log done
