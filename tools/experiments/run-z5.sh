#!/usr/bin/env bash
# Run Z, device call 5, on Y0 (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h): Nsight Compute
# (full set, one launch each, clocks not locked) of RMSNorm ours against Liger and
# torch.compile at the two shapes where run Z's single-run table has ours furthest behind
# Liger from 44 MB (2x2688x2048: 17.5 against 15.8 us; 1x4096x4096: 23.5 against 21.9), with
# the current dense short-row path (run U's 256-thread blocks of two vectors a thread; run T's
# profile predates it). Files: $OUT/z5.log, $OUT/z5-files.tar.gz (ncu details and summary).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
CALL_T0=$(date +%s)
LOG=$OUT/z5.log
use_prebuilt Y0 | tee -a "$LOG"
NCU_IMPLS=ltx,liger,compile NCU_LIMIT=${NCU_LIMIT:-170} ncu_full rms_norm:2x2688x2048 \
  rms_norm:1x4096x4096 > /dev/null
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size|Executed Ipc A|Theoretical Occupancy|Stall|One or More Eligible|L2 Hit|Mem Busy|Max Bandwidth" \
  "$OUT/ncu-details.txt" | head -150 >> "$LOG"
cat "$OUT/ncu-summary.csv" >> "$LOG"
experiment_end
