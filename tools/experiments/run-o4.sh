#!/usr/bin/env bash
# Run O, device call 4, on P (6081972: pair tables; the kernel source of HEAD after the two
# reverted experiments) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - Nsight Compute (full set) of ours and torch.compile's kernels at LTX's 2x2688x2048 bf16:
#     rms_norm_rope_qk with pair tables and with per-sample tables, gated_residual_adaln
#   - rms_norm_rope_qk with pair tables against its peers in fp16 (bf16 ran in call 1)
#   - LTX-Video 2B, eager and kernels in one process (part compare), one step profiled
# Files: $OUT/o4.log (summary), $OUT/ncu-details.txt, $OUT/ncu-summary.csv, $OUT/o4.tar.gz
# (sweep), $OUT/e2e.log, $OUT/e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/o4.log
W=/tmp/o4
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt P | tee -a "$LOG"
log "ncu: rms_norm_rope_qk (pairs, per-sample), gated_residual_adaln; ours and compile"
NCU_IMPLS=ltx,compile timeout 150 ncu --clock-control none --nvtx --nvtx-include "prof/" \
  --set full -o "$OUT/ncu" -f python3 tools/ncu_ops.py rms_norm_rope_qk_pairs:2x2688x2048 \
  rms_norm_rope_qk:2x2688x2048 gated_residual_adaln:2x2688x2048 > "$W/ncu.log" 2>&1
echo "ncu rc $?" | tee -a "$LOG"
tail -3 "$W/ncu.log" | tee -a "$LOG"
ncu --import "$OUT/ncu.ncu-rep" --page details > "$OUT/ncu-details.txt" 2>&1
ncu --import "$OUT/ncu.ncu-rep" --page raw --csv --metrics \
gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,smsp__inst_executed.sum \
  > "$OUT/ncu-summary.csv" 2>&1
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Stall|One or More Eligible|Issued Warp" \
  "$OUT/ncu-details.txt" | head -80 | tee -a "$LOG"
rm -f "$OUT/ncu.ncu-rep"
log "rms_norm_rope_qk with pair tables against its peers, fp16"
timeout 90 python3 benchmarks/sweep.py --dtypes fp16 --ops rms_norm_rope_qk_pairs \
  --out "$W/pairs-fp16" 2>&1 | tail -1 | tee -a "$LOG"
cat "$W/pairs-fp16/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/o4.tar.gz" .
log "LTX 2B: eager and kernels, one process"
PREBUILT=P PARTS=compare timeout ${O4_COMPARE_LIMIT:-200} bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|GPU state|TOO LARGE|FAILED|Error" \
  "$OUT/e2e.log" | tee -a "$LOG"
log done
