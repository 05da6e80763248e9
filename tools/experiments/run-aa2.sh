#!/usr/bin/env bash
# Run AA, device call 2, on Y0 (HEAD's CUDA source; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h). In order, each later step only while the call has time for it:
#   - LTX 2B at issue 5's setting, every configuration in one process, each call one CUDA graph
#     replay, --freeze, --gelu-in-matmul, with cuBLASLt given no workspace for every
#     configuration (--cublaslt-workspace-kib 0: call 1 found that it takes away the memset
#     node before each large matrix product, kernels + compile 39.62 / 39.56 ms against 40.16 /
#     40.00 and 39.87 / 40.05 in the processes around it)
#   - Nsight Compute of RMSNorm with the sweep's zeroing flush in place (as call 1) in Liger's
#     layout (LTX_RMS_DENSE_VPT=1 LTX_RMS_DENSE_THREADS=256: one row of one vector a thread a
#     block at D = 2048, 31 registers): does full occupancy take the gap call 1 measured
#     (ours 16.13 us, 56% warps active, against Liger's 14.69, 87%)?
#   - the same LTX 2B run with PyTorch's default workspace, every configuration
#   - LLaMA-8B prefill, every configuration
# Files: $OUT/aa2.log, $OUT/aa2-files.tar.gz. (The call ran with ncu's command inline; gpu_prebuilt.sh's
# ncu_flush is the same command.)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start aa2
use_prebuilt Y0 | tee -a "$LOG"
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul"
export LTX_E2E_KERNELS="Memset|memsets|rms_norm_dense|gated_residual_flat|adaln_dense|rms_norm_rope_dense"
ltx_e2e ltx-ws0-all 280 --all-configs --cublaslt-workspace-kib 0

if fits 60; then
  log "ncu, RMSNorm ours in Liger's layout, NCU_FLUSH=zero, --cache-control none, application replay"
  LTX_RMS_DENSE_VPT=1 LTX_RMS_DENSE_THREADS=256 ncu_flush knob zero ltx 60 \
    rms_norm:2x2688x2048 rms_norm:1x4096x4096 rms_norm:2x2688x4096
fi
if fits 200; then
  ltx_e2e ltx-default-all 280 --all-configs
fi
fits 80 && llama_e2e 80
experiment_end
