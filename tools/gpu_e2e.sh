#!/usr/bin/env bash
# End-to-end runs for issue 5 on a GPU machine, logs and JSON to $OUT (or ./out):
#   LTX-Video 2B transformer, 49 frames 768x512, batch 1 x2 (CFG), bf16, 10 steps, the four
#   configurations (eager, compile, kernels, kernels+compile) with a profiler breakdown each;
#   LLaMA-8B-sized prefill of 4096 tokens, the same four configurations.
# Optional: E2E_13B=1 adds the 13B LTX transformer (eager and kernels; compile costs ~2 min
# per configuration), SLOW_TESTS=1 runs the slow-marked tests first.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
export LTX_CUDA_CAPABILITIES=${LTX_CUDA_CAPABILITIES:-9.0}
status=0
python3 tools/build.py --backends cuda,cpu -j 16 2>&1 | tail -3 || exit 1
if [[ -n "${SLOW_TESTS:-}" ]]; then
  python3 -m pytest -q -p no:cacheprovider -m slow tests 2>&1 | tee "$OUT/slow-tests.log" | tail -15
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
LTX=(--num-frames 49 --height 512 --width 768 --batch-size 1 --cfg --steps 10
     --warmup-iterations 2 --no-progress)
python3 scripts/benchmark_example.py "${LTX[@]}" --all-configs --profile \
  --json "$OUT/ltx2b.json" 2>&1 | grep -v "^WARNING:kernels" | tee "$OUT/ltx2b.log" || status=1
python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
  --json "$OUT/llama8b.json" 2>&1 | grep -v "^WARNING:kernels" | tee "$OUT/llama8b.log" || status=1
if [[ -n "${E2E_13B:-}" ]]; then
  python3 scripts/benchmark_example.py "${LTX[@]}" --model-size 13b --use-optimized-kernels \
    --compare --steps 5 --json "$OUT/ltx13b.json" 2>&1 | grep -v "^WARNING:kernels" \
    | tee "$OUT/ltx13b.log" || status=1
fi
exit $status
