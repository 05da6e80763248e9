#!/usr/bin/env bash
# Queued for the next device session (not run yet): which of this package's layers pays under
# torch.compile in the LLaMA-8B-sized prefill. Run G (PERFORMANCE.md, end to end): kernels +
# compile (RMSNorm and rotary_pos_emb mapped) was 0.986x of compile over 3 rounds; its RMSNorm
# keeps inductor from fusing the residual add into the norm, and its rope (1.02 ms) is slower
# than inductor's rope + layout (0.74 ms), while inductor's silu * up varied by 1.3 ms between
# configurations. Here compile against kernels + compile with one layer mapped at a time, 3
# alternating rounds each. Needs the tree's extension carried: PREBUILT=<name> (see
# tools/gpu_prebuilt.sh; carry [".whl", ".prebuilt"]). Log: $OUT/e2e.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
for layers in RMSNorm rotary_pos_emb; do
  PARTS=llama LLAMA_TAG=-$layers LLAMA_ARGS="--configs compile,kernels+compile \
--compile-layers $layers --rounds 3 --iterations 5 --no-reference" \
    timeout 280 bash tools/gpu_e2e.sh
done
