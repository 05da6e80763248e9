#!/usr/bin/env bash
# Run E, device call 2: the kernels as committed after call 1 (no L1 prefetch, gated AdaLN
# loading chunk by chunk, fused_add_rms_norm loading every chunk first, the activation bound,
# FastDiv row offsets): build, time our kernels (quick shapes, bf16 and fp16; compared offline
# with call 1's HEAD sweep), then the CUDA tests of every op family. Logs under $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
OPS=adaln,adaln_per_token,gated_residual_adaln,rms_norm,fused_add_rms_norm,rope_qk
OPS=$OPS,rms_norm_rope,rms_norm_rope_qk,gelu_tanh,geglu,silu_and_mul
echo "== build ($(date +%T))" | tee -a "$OUT/e2.log"
python3 tools/build.py --backends cuda,cpu -j 16 2>&1 | tail -1 | tee -a "$OUT/e2.log"
echo "== sweep ($(date +%T))" | tee -a "$OUT/e2.log"
python3 benchmarks/sweep.py --impls ltx --ops $OPS --quick --dtypes bf16,fp16 \
  --out "$OUT/e2-ltx" 2>&1 | grep -v "^$" | tail -40 >> "$OUT/e2.log"
rm -f "$OUT/e2-ltx/sweep.png" "$OUT/e2-ltx/sweep.md"
echo "== tests ($(date +%T))" | tee -a "$OUT/e2.log"
timeout ${TEST_TIMEOUT:-330} python3 -m pytest -q -p no:cacheprovider -n 16 -k cuda \
  tests/test_adaln.py tests/test_rms_norm.py tests/test_rope.py tests/test_activation.py \
  2>&1 | tail -15 | tee -a "$OUT/e2.log"
echo "== done ($(date +%T))" | tee -a "$OUT/e2.log"
