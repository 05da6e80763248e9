#!/usr/bin/env bash
# Run Q, device call 3, on R (afe3b8e) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the AdaLN ops with every peer (eager, torch.compile, the unfused sequence), bf16 and
#     fp16: the table's rows for these ops (benchmarks/report.py merges them into the full run)
#   - LTX-Video 2B: compile and kernels + compile at their fastest settings, loop profiled
#   - the CUDA tests of the LTX / FLUX integrations (the dense path in the models)
# Files: $OUT/q3.log (summary), $OUT/q3.tar.gz (sweep), $OUT/e2e.*, $OUT/tests.log. (Its
# end-to-end step moved into tools/gpu_prebuilt.sh's e2e_best after it ran: the same commands.)
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start q3
use_prebuilt R | tee -a "$LOG"
log "adaln, adaln_per_token, gated_residual_adaln: ours and every peer, bf16 and fp16"
timeout 170 python3 benchmarks/sweep.py --dtypes bf16,fp16 \
  --ops adaln,adaln_per_token,gated_residual_adaln --out "$W/peers" 2>&1 | tail -1
cat "$W/peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/q3.tar.gz" .
log "LTX 2B, part best (compile, kernels + compile), loop profiled"
e2e_best R "${Q3_E2E_LIMIT:-250}"
log "tests R (CUDA): the LTX and FLUX integrations"
run_tests tests 110 -n 16 -k "cuda and (ltx or flux or diffusers)" tests/test_integrations.py
log done
