#!/usr/bin/env bash
# Run II, device call 1. II1 = 216d5fc's source (the erf GELU as exp(-x^2 / 2) t Q(t), the CPU
# vectors' formula, in common/activation_math.h) built for sm_90 on the development machine;
# GG0 = the source before run HH's erfcf (1 + erff; run DD's Y0 kernels), for the A/B. Run HH
# (H100) measured the erfcf form 11-17% slower than GG0 on geglu_erf; II1 should match GG0.
# Carry [".whl-s", ".prebuilt/GG0.tar.xz", ".prebuilt/II1.tar.xz"] with WHEELS=.whl-s (Liger,
# kernels; no diffusers: the tree and the two archives leave no room for .whl-h, so
# test_activation's diffusers and kernelize tests are left out here; they ran on the CPU).
# In order, each later step only while the call has time for it:
#   1. II1: test_activation.py's CUDA tests (test_gelu_erf_tail among them), 16 workers;
#   2. tools/gelu_erf_accuracy.py on II1: the erf GELU's ulps on CUDA and the CPU, F.gelu beside;
#   3. prebuilt_ab GG0 II1: ours alone, geglu_erf (changed) and geglu (tanh; the control), bf16,
#      fp16 and fp32 (the fp32 outputs take expf and an IEEE division);
#   4. II1, geglu_erf with its peers (eager, torch.compile), bf16 and fp16;
#   5. Nsight Compute with the sweep's zeroing flush before each launch (application replay):
#      RMSNorm ours, torch.compile and Liger at 2x2688x2048 and 1x4096x8192, the warp stall
#      reasons, L2 read hits and DRAM bytes (runs AA, CC and HH left it open).
# Files: $OUT/ii1.log, the tests' log, the tables, the ncu CSV (packed by experiment_end).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ii1
use_prebuilt II1 | tee -a "$LOG"

log "tests: test_activation.py's CUDA tests on II1 (not the diffusers ones), 16 workers"
run_tests tests-act-cuda 120 -n 16 -k "cuda and not diffusers and not kernelize" \
  tests/test_activation.py

if fits 40; then
  log "the erf GELU's accuracy on II1, CUDA and CPU"
  timeout 40 python3 tools/gelu_erf_accuracy.py 2>&1 | grep -v "dirty git tree" \
    | tee "$OUT/gelu-erf-accuracy.md" | tee -a "$LOG"
fi
if fits 170; then
  log "A/B: GG0 (1 + erff) against II1 (exp(-x^2/2) t Q(t)), ours alone"
  AB_DTYPES=bf16,fp16,fp32 AB_SWEEP_LIMIT=40 prebuilt_ab GG0 II1 geglu_erf,geglu "$OUT/ab" \
    | tee -a "$LOG"
  use_prebuilt II1 > /dev/null
fi
fits 70 && peer_sweeps geglu_erf "$OUT" 35 bf16 fp16
if fits 100; then
  log "ncu, zeroing flush, application replay: RMSNorm ours / compile / Liger, stall reasons"
  NCU_METRICS=$NCU_STALL_METRICS ncu_flush stalls zero ltx,compile,liger $(( ${CALL_BUDGET:-560} - $(date +%s) + CALL_T0 - 10 )) \
    rms_norm:2x2688x2048 rms_norm:1x4096x8192
fi
experiment_end
