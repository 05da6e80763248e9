#!/usr/bin/env bash
# Run E, device call 4 (the lease's last ~200 s): the full shape table (not --quick), bf16, every
# peer, for the LLM ops first and the LTX ops after, each sweep under its own time limit. No
# build on the device: the sm_90 extension built on this machine against torch 2.11+cu130
# travels as build/torch211-cxx11-cu130-x86_64-linux (carry), so the limit goes to timing. A
# sweep cut by its limit writes no CSV; its per-case lines (every implementation's time) are in
# $OUT/e4.log.
#   LTX_CUDA_CAPABILITIES=9.0 /tmp/v211/bin/python tools/build.py --backends cuda   # here
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
log() { echo "== $* ($(date +%T))" | tee -a "$OUT/e4.log"; }
for part in "llm:rms_norm,fused_add_rms_norm,silu_and_mul,rope_qk:${LLM_LIMIT:-110}" \
            "ltx:adaln,gated_residual_adaln,gelu_tanh,geglu,adaln_per_token:${LTX_LIMIT:-70}"; do
  IFS=: read -r name ops limit <<<"$part"
  log "sweep $name ($ops, full shapes, bf16, ${limit} s limit)"
  timeout "$limit" python3 benchmarks/sweep.py --dtypes bf16 --ops "$ops" --out "$OUT/full-$name" \
    2>&1 | grep -e "^\[" -e "^#" -e "Error" -e "error" >> "$OUT/e4.log"
  rm -f "$OUT/full-$name/sweep.png"
done
log done
