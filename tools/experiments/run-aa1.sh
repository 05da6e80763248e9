#!/usr/bin/env bash
# Run AA, device call 1, on Y0 (HEAD's CUDA source; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h). Two questions, no kernel change:
#   - issue 5: which library call issues the memset before every large matrix product and
#     attention call of the LTX step (225 graph nodes a step) and what a call costs with and
#     without them: tools/gemm_attention_probe.py by default and with cuBLASLt given no
#     workspace (CUBLASLT_WORKSPACE_SIZE=0); when that takes the matrix products' memsets away,
#     LTX 2B kernels + compile end to end with and without it (A, B, A in separate processes)
#   - issue 4: RMSNorm ours against Liger under Nsight Compute with the sweep's L2 flush in
#     place (NCU_FLUSH=zero: dirty lines; read: clean), --cache-control none, application
#     replay: DRAM bytes read and written during each kernel, at the three shapes where the
#     zeroing flush costs ours 2.4-3.3 us and Liger 0.5-2.3 (run Z)
# Files: $OUT/aa1.log, $OUT/aa1-files.tar.gz. (The call ran with the CSV parsing of
# tools/ncu_csv_rows.py inline, printing metric names shortened; the same rows; and with ncu's
# command inline, which gpu_prebuilt.sh's ncu_flush now is.)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start aa1
use_prebuilt Y0 | tee -a "$LOG"
log "probe: default"
python3 tools/gemm_attention_probe.py --tag default --json "$OUT/probe-default.json" 2>&1 \
  | tee "$OUT/probe-default.md" | tee -a "$LOG"
log "probe: CUBLASLT_WORKSPACE_SIZE=0"
CUBLASLT_WORKSPACE_SIZE=0 python3 tools/gemm_attention_probe.py --tag lt-ws0 --only linear \
  --json "$OUT/probe-ws0.json" 2>&1 | tee "$W/probe-ws0.md" | tee -a "$LOG"
log "probe: addmm gelu, mm with CUBLASLT_WORKSPACE_SIZE=0"
CUBLASLT_WORKSPACE_SIZE=0 python3 tools/gemm_attention_probe.py --tag lt-ws0 --only m \
  2>&1 | grep -E "addmm|^\| mm" | tee -a "$LOG"

for flush in zero read; do
  fits 90 || break
  log "ncu, RMSNorm ours and Liger, NCU_FLUSH=$flush, --cache-control none, application replay"
  NCU_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    ncu_flush "$flush" "$flush" ltx,liger 150 \
    rms_norm:2x2688x2048 rms_norm:1x4096x4096 rms_norm:2x2688x4096
done

# only when the workspace setting took the projection's memsets away
if grep -q "^| linear proj 5376x2048->2048 | [0-9.]* | 0 |" "$W/probe-ws0.md" &&
  ! grep -q "^| linear proj 5376x2048->2048 | [0-9.]* | 0 |" "$OUT/probe-default.md" &&
  fits 240; then
  export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul --compile --use-optimized-kernels"
  ltx_e2e kc-default-1 100
  CUBLASLT_WORKSPACE_SIZE=0 ltx_e2e kc-ws0 100
  fits 100 && ltx_e2e kc-default-2 100
fi
experiment_end
