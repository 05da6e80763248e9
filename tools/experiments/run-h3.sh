#!/usr/bin/env bash
# Run H, device call 3, on the kept kernels (.prebuilt/final.tar.xz; carry [".whl-h",
# ".prebuilt"]): compute-sanitizer over the rope and RMSNorm families (tools/sanitize_ops.py
# now includes a GQA rope_qk that takes the heads path), then the LLaMA-8B-sized prefill,
# compile against kernels + compile, 3 alternating rounds: first with both layers mapped under
# compile (RMSNorm, rotary_pos_emb), then with rotary_pos_emb alone. Log: $OUT/e2e.log,
# JSON: $OUT/e2e.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PREBUILT=final
PARTS=sanitize SANITIZE="rope rms_norm" timeout 170 bash tools/gpu_e2e.sh
ARGS="--configs compile,kernels+compile --rounds 3 --iterations 5 --no-reference --profile"
PARTS=llama LLAMA_TAG=-both LLAMA_ARGS="$ARGS" timeout 200 bash tools/gpu_e2e.sh
PARTS=llama LLAMA_TAG=-rope LLAMA_ARGS="$ARGS --compile-layers rotary_pos_emb" \
  timeout 200 bash tools/gpu_e2e.sh
