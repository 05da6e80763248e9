#!/usr/bin/env bash
# Run HH, device call 1. HH1 = b4a44f0's source (the erf GELU as 0.5 x erfc(-x / sqrt 2), z's
# rounding taken back for fp32 outputs: common/activation_math.h, gelu_erf) built for sm_90 on
# the development machine; GG0 = the CUDA source before it (run DD's Y0 kernels), for the A/B.
# Carry [".whl-s", ".prebuilt"] with WHEELS=.whl-s (Liger, kernels; no diffusers or
# transformers: the tree and two archives leave no room for .whl-h).
# In order, each later step only while the call has time for it:
#   1. HH1: test_activation.py's CUDA tests (the new test_gelu_erf_tail among them), 16 workers;
#   2. tools/gelu_erf_accuracy.py on HH1: the erf GELU's ulps on CUDA and the CPU, F.gelu beside;
#   3. prebuilt_ab GG0 HH1: ours alone, geglu_erf (changed) and geglu (tanh; the control);
#   4. HH1, geglu_erf with its peers (eager, torch.compile), bf16 and fp16;
#   5. HH1: the op families' CPU tests on this machine's CPU (another x86 model than the
#      development machine's; the model tests need diffusers and transformers), 16 workers; tools/cpu_simd_bench.py there (one thread) with the CPU model;
#   6. Nsight Compute with the sweep's zeroing flush before each launch (application replay):
#      RMSNorm ours, torch.compile and Liger at 2x2688x2048 and 1x4096x8192, the warp stall
#      reasons, L2 read hits and DRAM bytes (the look runs AA and CC left open).
# Files: $OUT/hh1.log, the tests' logs, the tables, the ncu CSV (packed by experiment_end).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start hh1
use_prebuilt HH1 | tee -a "$LOG"

log "tests: test_activation.py's CUDA tests on HH1, 16 workers"
run_tests tests-act-cuda 120 -n 16 -k "cuda" tests/test_activation.py

if fits 40; then
  log "the erf GELU's accuracy on HH1, CUDA and CPU"
  timeout 40 python3 tools/gelu_erf_accuracy.py 2>&1 | grep -v "dirty git tree" \
    | tee "$OUT/gelu-erf-accuracy.md" | tee -a "$LOG"
fi
if fits 150; then
  log "A/B: GG0 (1 + erf) against HH1 (erfc), ours alone"
  AB_SWEEP_LIMIT=35 prebuilt_ab GG0 HH1 geglu_erf,geglu "$OUT/ab" | tee -a "$LOG"
  use_prebuilt HH1 > /dev/null
fi
fits 70 && peer_sweeps geglu_erf "$OUT" 35 bf16 fp16
if fits 150; then
  log "tests: the op families' CPU tests on this machine's CPU, 16 workers"
  run_tests tests-cpu 150 -n 16 -k "not cuda" tests/test_activation.py tests/test_cpu_rows.py \
    tests/test_rms_norm.py tests/test_adaln.py tests/test_rope.py
fi
if fits 70; then
  log "the CPU backend against PyTorch on this machine's CPU"
  grep -m1 "model name" /proc/cpuinfo | tee -a "$LOG"
  grep -o -w "avx512f\|avx512_fp16\|avx512_bf16\|avx2\|f16c" /proc/cpuinfo | sort -u | tr '\n' ' ' \
    | tee -a "$LOG"; echo | tee -a "$LOG"
  timeout 70 python3 tools/cpu_simd_bench.py 2>&1 | grep -v "dirty git tree" \
    | tee "$OUT/cpu-bench.md" | tee -a "$LOG"
fi
if fits 100; then
  log "ncu, zeroing flush, application replay: RMSNorm ours / compile / Liger, stall reasons"
  NCU_METRICS=$NCU_STALL_METRICS ncu_flush stalls zero ltx,compile,liger $(( ${CALL_BUDGET:-560} - $(date +%s) + CALL_T0 - 10 )) \
    rms_norm:2x2688x2048 rms_norm:1x4096x8192
fi
experiment_end
