#!/usr/bin/env bash
# Run G, device call 2: issue 5's end-to-end runs on the kernels kept after call 1, carried
# prebuilt (.prebuilt/$1.tar.xz; carry [".whl", ".prebuilt"]): LTX-Video 2B (the four
# configurations, profiled) and LLaMA-8B-sized prefill with the four configurations in 3
# alternating rounds (benchmark_transformers.py --rounds). Log and JSON: $OUT/e2e.log, e2e.json.
#   bash tools/experiments/run-g2.sh A
set -uo pipefail
cd "$(dirname "$0")/../.."
PREBUILT=${1:?usage: $0 PREBUILT_NAME} PARTS="ltx llama" \
  LLAMA_ARGS="--rounds 3 --iterations 5 --no-reference" LLAMA_TAG=-rounds \
  timeout 570 bash tools/gpu_e2e.sh
