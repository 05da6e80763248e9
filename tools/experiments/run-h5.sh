#!/usr/bin/env bash
# Run H, device call 5, on the final kernels (.prebuilt/adaln128.tar.xz: AdaLN in blocks of 128
# threads beyond one wave; carry [".whl-h", ".prebuilt"]): the CUDA tests of the row kernels,
# the AdaLN ops' full-table shapes with every peer (bf16), the LLaMA-8B-sized prefill (compile
# against kernels + compile with the benchmark's default mapping under compile, rotary_pos_emb
# alone, 5 alternating rounds), then the AdaLN ops in fp16. Few files come back from a lease:
# $OUT/h5.log, $OUT/h5.tar.gz (sweeps), $OUT/e2e.log and e2e.json (LLaMA).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
LOG=$OUT/h5.log
W=/tmp/h5
mkdir -p $W
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
ADALN=adaln,adaln_per_token,gated_residual_adaln
use_prebuilt adaln128 || exit 1
log "tests: -k cuda test_adaln test_rms_norm"
timeout 150 python3 -m pytest -q -p no:cacheprovider -n 14 -k cuda tests/test_adaln.py \
  tests/test_rms_norm.py 2>&1 | grep -v "^SKIPPED" | tail -4 | tee -a "$LOG"
sweep() {  # dtype
  log "sweep $1: $ADALN, every peer"
  timeout 120 python3 benchmarks/sweep.py --dtypes $1 --ops $ADALN --out $W/sweep-$1 2>&1 \
    | tail -2 | tee -a "$LOG"
  tar -C $W -czf "$OUT/h5.tar.gz" .
}
sweep bf16
PREBUILT=adaln128 PARTS=llama LLAMA_TAG=-final LLAMA_ARGS="--configs compile,kernels+compile \
--rounds 5 --iterations 5 --no-reference --profile" timeout 150 bash tools/gpu_e2e.sh \
  > /dev/null 2>&1
grep -E "round|against|median|ours|rope_heads|total" "$OUT/e2e.log" | tee -a "$LOG"
sweep fp16
log done
