#!/usr/bin/env bash
# Run EE, device call 3, on F0 (HEAD's CUDA source: run DD's Y0 kernels, the packed path
# rejected) and E0 (call 1's build, with it); carry [".whl-h", ".prebuilt"], WHEELS=.whl-h
# (as run: kernels, diffusers, Liger and what they import, without the sigstore chain of the
# kernels CLI, for room in the 64 MiB carry; no transformers, so the H200's own ran, as in
# calls 1-2: see run-ee4.sh). In order, each later step only while the call has time for it:
#   1. LLaMA-8B prefill, every configuration, on F0, then on E0: call 2 (E0, the packed path
#      off) had the kernels configuration at 109.47 ms where runs Y-AA had 99.1-101.2 (eager,
#      compile and kernels + compile where they were): the build, or the lease?
#   2. the kernels configuration profiled (one forward, --profile), F0 then E0: which kernels
#      take the time;
#   3. F0: test_rms_norm_register_rows and compute-sanitizer of the rms_norm families (the
#      register path's grid, rms_norm_grids);
#   4. F0: LTX 2B at issue 5's setting (cuBLASLt workspace 0), compile, kernels + compile,
#      kernels + compile, one process each: more samples of the 40 ms target on this lease.
# Files: $OUT/ee3.log, $OUT/ee3-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ee3
llama_all() {
  log "LLaMA-8B prefill on $1: every configuration"
  timeout 90 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds 3 --iterations 5 --no-reference --configs eager,kernels,compile,kernels+compile \
    --json "$OUT/llama-$1.json" > "$OUT/llama-$1.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "round [0-9]/|ms \(median|against|per round" "$OUT/llama-$1.log" | tee -a "$LOG"
}
llama_profile() {
  log "LLaMA-8B prefill on $1: kernels, profiled"
  timeout 60 python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds 1 --iterations 5 --no-reference --configs kernels --profile \
    --json "$OUT/llama-prof-$1.json" > "$OUT/llama-prof-$1.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -vE "dirty git tree" "$OUT/llama-prof-$1.log" | head -40 | tee -a "$LOG"
}
for pb in F0 E0; do
  use_prebuilt $pb | tee -a "$LOG"
  fits 90 && llama_all $pb
done
for pb in F0 E0; do
  use_prebuilt $pb > /dev/null
  fits 60 && llama_profile $pb
done
use_prebuilt F0 > /dev/null
fits 60 && run_tests tests-rows 60 -n 16 -k "cuda and register_rows" tests/test_rms_norm.py
fits 60 && sanitize rms 25 rms_norm_grids
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul --cublaslt-workspace-kib 0"
n=0
for cfg in compile kernels+compile kernels+compile; do
  LTX_TAG=$((++n))
  fits 100 && ltx_time "$cfg" 100
done
experiment_end
