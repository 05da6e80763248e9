#!/usr/bin/env bash
# Run N, device call 1, on O (a8f922f..2592e31: every op tagged needs_fixed_stride_order; the
# gated_residual flat kernel's block size a knob) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - gated_residual flat kernel at 256 and 128 threads a block (LTX_GATED_RESIDUAL_FLAT_THREADS),
#     ours alone, twice each, bf16 and fp16; then at 128 against its peers
#   - the CUDA tests of what changed (the ops' registration, the integrations under compile,
#     the scripts, the AdaLN family)
#   - LTX-Video 2B: compile and kernels + compile at their fastest settings (part best: --freeze,
#     CUDA graphs, --gelu-in-matmul), one step profiled and 3 steps of the loop profiled, the
#     sync-debug step (LTX_ARGS)
# Files: $OUT/n1.log (summary), $OUT/n1.tar.gz (sweeps), $OUT/tests.log, $OUT/e2e.log, e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/n1.log
W=/tmp/n1
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
nvidia-smi --query-gpu=clocks_event_reasons.active \
  --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt O | tee -a "$LOG"
for th in 256 128 256 128; do
  log "gated_residual O, LTX_GATED_RESIDUAL_FLAT_THREADS=$th, ours"
  LTX_GATED_RESIDUAL_FLAT_THREADS=$th timeout 60 python3 benchmarks/sweep.py --impls ltx \
    --ops gated_residual --out "$W/gr-th$th-$(date +%s)" 2>&1 | tail -1 | tee -a "$LOG"
done
python3 - "$W" <<'PY' | tee -a "$LOG"
import csv, sys, glob, statistics as st
from collections import defaultdict
t = defaultdict(lambda: defaultdict(list))
for d in sorted(glob.glob(sys.argv[1] + "/gr-th*")):
    th = d.split("/gr-th")[1].split("-")[0]
    for r in csv.DictReader(open(d + "/sweep.csv")):
        t[(r["shape"], r["dtype"])][th].append(float(r["us"]))
print("shape | dtype | 256 threads us (2 runs) | 128 threads us (2 runs) | 128 / 256")
for (shape, dt), v in t.items():
    print(f"{shape} | {dt} | {' '.join(f'{x:.2f}' for x in v['256'])} | "
          f"{' '.join(f'{x:.2f}' for x in v['128'])} | {st.mean(v['128']) / st.mean(v['256']):.3f}")
PY
log "gated_residual O at 128 threads against its peers, bf16 and fp16"
LTX_GATED_RESIDUAL_FLAT_THREADS=128 timeout 90 python3 benchmarks/sweep.py --ops gated_residual \
  --out "$W/gr-peers" 2>&1 | tail -1 | tee -a "$LOG"
cat "$W/gr-peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/n1.tar.gz" .
log "tests O (CUDA): registration, integrations, scripts, adaln"
timeout -s INT 150 python3 -m pytest -q -p no:cacheprovider -n 14 -rf \
  -k "cuda and (compile or gated_residual or integrations or build or scripts or adaln)" tests \
  > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -30 | tee -a "$LOG"
log "LTX 2B, part best, loop profiled"
PREBUILT=O PARTS=best LTX_ARGS="--profile-loop 3 --sync-debug" timeout ${N1_E2E_LIMIT:-300} \
  bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|sync debug|host-bound|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
