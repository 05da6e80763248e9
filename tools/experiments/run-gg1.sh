#!/usr/bin/env bash
# Run GG, device call 1, on GG0: HEAD's source (the CUDA source unchanged since run DD's Y0; the
# CPU backend changed this session: the erf GELU in vectors, the 16-bit stores, the sigmoid's
# exp), built for sm_90 on the development machine; carry [".whl-h", ".prebuilt"], WHEELS=.whl-h.
# In order, each later step only while the call has time for it:
#   1. tests: every CPU test (on this machine's CPU, another x86 model than the development
#      machine's) and test_activation.py's CUDA tests (its file changed), 16 workers;
#   2. tools/gelu_erf_accuracy.py: the erf GELU's ulps on the CPU and CUDA backends, F.gelu beside;
#   3. tools/cpu_simd_bench.py on this machine's CPU (one thread), and its CPU model;
#   4. Nsight Compute with the sweep's zeroing flush before each launch (application replay):
#      RMSNorm ours, torch.compile and Liger at 2x2688x2048 (Liger ahead under this flush, run
#      AA) and 1x4096x8192 (compile ahead), the warp stall reasons, L2 read hits and DRAM bytes:
#      the look at "how the instruction streams meet a full L2" that runs AA and CC left open
#      (CC's sections took one ~18 s run a pass and did not finish; these metrics are fewer).
# Files: $OUT/gg1.log, the tests' logs, the accuracy and bench tables, the ncu CSV.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start gg1
use_prebuilt GG0 | tee -a "$LOG"

log "tests: every CPU test, 16 workers"
run_tests tests-cpu 150 -n 16 -k "not cuda" tests/
log "tests: test_activation.py's CUDA tests, 16 workers"
fits 120 && run_tests tests-act-cuda 120 -n 16 -k "cuda" tests/test_activation.py

if fits 40; then
  log "the erf GELU's accuracy, CPU and CUDA"
  timeout 40 python3 tools/gelu_erf_accuracy.py 2>&1 | grep -v "dirty git tree" \
    | tee "$OUT/gelu-erf-accuracy.md" | tee -a "$LOG"
fi
if fits 70; then
  log "the CPU backend against PyTorch on this machine's CPU"
  grep -m1 "model name" /proc/cpuinfo | tee -a "$LOG"
  grep -o -w "avx512f\|avx512_fp16\|avx512_bf16\|avx2\|f16c" /proc/cpuinfo | sort -u | tr '\n' ' ' \
    | tee -a "$LOG"; echo | tee -a "$LOG"
  timeout 70 python3 tools/cpu_simd_bench.py 2>&1 | grep -v "dirty git tree" \
    | tee "$OUT/cpu-bench.md" | tee -a "$LOG"
fi
STALLS=long_scoreboard,lg_throttle,barrier,short_scoreboard,wait,not_selected,selected,mio_throttle,math_pipe_throttle,no_instruction,dispatch_stall,drain,membar
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for s in ${STALLS//,/ }; do
  METRICS+=,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
if fits 150; then
  log "ncu, zeroing flush, application replay: RMSNorm ours / compile / Liger, stall reasons"
  NCU_METRICS=$METRICS ncu_flush stalls zero ltx,compile,liger $(( ${CALL_BUDGET:-560} - $(date +%s) + CALL_T0 - 10 )) \
    rms_norm:2x2688x2048 rms_norm:1x4096x8192
fi
experiment_end
