#!/usr/bin/env bash
# Superseded: run G ran this on its kernels (run-g2.sh). Was: issue 5's end-to-end runs on run E's
# kernels, one device call: LTX-Video 2B (the four configurations, profiled) and LLaMA-8B-sized
# prefill with the four configurations in 3 alternating rounds (benchmark_transformers.py
# --rounds; all four models, 64 GB, resident at once). Log and JSON: $OUT/e2e.log, e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
PARTS="ltx llama" LLAMA_ARGS="--rounds 3 --iterations 5 --no-reference" LLAMA_TAG=-rounds \
  timeout 570 bash tools/gpu_e2e.sh
