#!/usr/bin/env bash
# Run P, device call 3, on T (27847b3: change 41's wide row path, reverted after call 1)
# (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): Nsight Compute (full set) of ours (the wide
# kernels: one vector a thread) and torch.compile's kernels for gated_residual_adaln, adaln and
# rms_norm at LTX 2B's 2x2688x2048 bf16: the same layout, and compile's faster; what differs.
# Files: $OUT/p3.log, $OUT/ncu-details.txt, $OUT/ncu-summary.csv.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/p3.log
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv | tee -a "$LOG"
python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
use_prebuilt T | tee -a "$LOG"
log "ncu: gated_residual_adaln, adaln, rms_norm at 2x2688x2048; ours (wide) and compile"
NCU_IMPLS=ltx,compile timeout 200 ncu --clock-control none --nvtx --nvtx-include "prof/" \
  --set full -o "$OUT/ncu" -f python3 tools/ncu_ops.py gated_residual_adaln:2x2688x2048 \
  adaln:2x2688x2048 rms_norm:2x2688x2048 > "$OUT/ncu.log" 2>&1
echo "ncu rc $?" | tee -a "$LOG"
tail -3 "$OUT/ncu.log" | tee -a "$LOG"
ncu --import "$OUT/ncu.ncu-rep" --page details > "$OUT/ncu-details.txt" 2>&1
ncu --import "$OUT/ncu.ncu-rep" --page raw --csv --metrics \
  gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,smsp__inst_executed.sum \
  > "$OUT/ncu-summary.csv" 2>&1
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size|Executed Ipc A|Issue Slots Busy|Theoretical Occupancy|Stall|One or More Eligible" \
  "$OUT/ncu-details.txt" | head -120 | tee -a "$LOG"
rm -f "$OUT/ncu.ncu-rep"
log done
