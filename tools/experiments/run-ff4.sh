#!/usr/bin/env bash
# Run FF, device call 4, on H0 (HEAD's CUDA source with tools/experiments/rms_dense_vpt4.patch,
# not taken after this call: the dense path at four vectors a thread: rms_norm_dense_kernel<VPT = 4>, the register path's layout at D = 8192 (256 threads
# a row, one row a block) with the dense path's specializations (rows at one stride in 32
# bits, no division, one barrier, HAS_W a template argument; the weight after the
# reduction): 48 registers and 512 SASS instructions for bf16 with a weight, where
# rms_norm_kernel<CHUNKS = 4> has 55 and 872 with two 64-bit divisions a row; taken only with
# LTX_RMS_DENSE_VPT=4 LTX_RMS_DENSE_THREADS=256 LTX_RMS_DENSE_MAX_MB=0; carry [".whl-h",
# ".prebuilt"]). The session's last ~250 s of device time, so one short step each:
#   1. knob A/B at D = 8192, ours with torch.compile beside, bf16, 2 rounds a sweep;
#   2. test_rms_norm.py's register-path and dense-path grid tests under the knobs.
# Files: $OUT/ff4.log, $OUT/ff4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ff4
use_prebuilt H0 | tee -a "$LOG"
D4=LTX_RMS_DENSE_VPT=4,LTX_RMS_DENSE_THREADS=256,LTX_RMS_DENSE_MAX_MB=0
log "A/B: the dense path at four vectors a thread, ours and torch.compile, bf16"
AB_PEER=compile AB_DTYPES=bf16 AB_ARGS="--rounds 2 --shapes 1x4096x8192,1x16384x8192" \
  AB_SWEEP_LIMIT=30 knob_ab rms_norm "$W/ab" "def=" "d4=$D4" | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab
log "tests under the knobs"
env ${D4//,/ } timeout -s INT 60 python3 -m pytest -q -p no:cacheprovider -rf -n 16 \
  -k "cuda and (register_rows or dense_rows_many or bulk or many_rows)" tests/test_rms_norm.py \
  > "$OUT/tests-d4.log" 2>&1
grep -E "FAILED|passed|failed" "$OUT/tests-d4.log" | tail -5 | tee -a "$LOG"
experiment_end
