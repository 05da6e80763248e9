#!/usr/bin/env bash
# Run R, device call 2, on V (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h; $R2_ENV: knob
# settings call 1 chose over the defaults, e.g. "LTX_RMS_DENSE_MAX_MB=64", empty if none):
#   - the RMSNorm and norm + rope ops with every peer (eager, F.rms_norm, torch.compile,
#     Liger, the unfused sequence), bf16 and fp16: the table's rows for these ops
#     (benchmarks/report.py merges them into the full run)
#   - the knob tests of the new settings (dense off: the sm_75 / sm_80 paths; RMSNorm at two
#     vectors a thread; one-row blocks)
# Files: $OUT/r2.log (summary), $OUT/r2.tar.gz (sweep), $OUT/tests-knobs.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start r2
use_prebuilt V | tee -a "$LOG"
log "settings: ${R2_ENV:-defaults}"
OPS=rms_norm,fused_add_rms_norm,rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared
OPS=$OPS,rms_norm_rope_qk_pairs
# rms_norm alone under $R2_ENV (call 1: its dense path only up to 8 MiB of x), the others at
# the defaults.
for dt in bf16 fp16; do  # bf16 first (issue 4's targets); each keeps what it wrote if cut
  log "rms_norm: ours and every peer, $dt (${R2_ENV:-defaults})"
  env ${R2_ENV:-LTX_NONE=1} timeout $([[ $dt == bf16 ]] && echo 90 || echo 60) \
    python3 benchmarks/sweep.py --dtypes $dt --ops rms_norm --out "$W/rms-$dt" 2>&1 | tail -1
  log "${OPS#rms_norm,}: ours and every peer, $dt"
  timeout $([[ $dt == bf16 ]] && echo 150 || echo 100) python3 benchmarks/sweep.py \
    --dtypes $dt --ops ${OPS#rms_norm,} --out "$W/peers-$dt" 2>&1 | tail -1
done
python3 benchmarks/report.py "$W"/rms-bf16/sweep.csv "$W"/peers-bf16/sweep.csv \
  "$W"/rms-fp16/sweep.csv "$W"/peers-fp16/sweep.csv --out "$W/peers" > /dev/null 2>&1
grep -E "ltx" "$W/peers/sweep.md" >> "$LOG" 2>/dev/null
tar -C $W -czf "$OUT/r2.tar.gz" .
log "knob tests: dense off, RMSNorm at two vectors a thread, one-row blocks"
run_tests tests-knobs 120 -k "dense-off or rms-dense or dense-row-blocks" \
  tests/test_stage_knobs.py
log done
