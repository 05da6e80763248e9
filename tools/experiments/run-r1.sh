#!/usr/bin/env bash
# Run R, device call 1, on V (c5f36e3: the dense paths of rms_norm / fused_add_rms_norm and
# rms_norm_rope(_qk), on by default on sm_90) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - ours alone, bf16, the RMSNorm and norm + rope ops: dense off (LTX_RMS_DENSE=0
#     LTX_NORM_ROPE_DENSE=0: run Q's paths), on (the defaults), twice each, interleaved, and
#     RMSNorm at two vectors a thread (LTX_RMS_DENSE_VPT=2) once; A/B tables against off
#   - the CUDA tests of rms_norm and rope
#   - compute-sanitizer memcheck and racecheck of the rms_norm and rope families
# Files: $OUT/r1.log (summary), $OUT/r1.tar.gz (sweeps, A/B tables), $OUT/tests*.log,
# $OUT/sanitize-*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start r1
use_prebuilt V | tee -a "$LOG"
OPS=rms_norm,fused_add_rms_norm,rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared
OPS=$OPS,rms_norm_rope_qk_pairs
sweep() {  # name, env...: ours alone, bf16
  local name=$1; shift
  log "ours, $name"
  env "$@" timeout 45 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops $OPS \
    --out "$W/$name" 2>&1 | tail -1
}
OFF=(LTX_RMS_DENSE=0 LTX_NORM_ROPE_DENSE=0)
sweep off1 "${OFF[@]}"; sweep on1 LTX_NONE=1; sweep vpt2 LTX_RMS_DENSE_VPT=2
sweep off2 "${OFF[@]}"; sweep on2 LTX_NONE=1
log "A = dense off (run Q's paths), B = dense on (the defaults)"
python3 tools/ab_table.py $W/off1/sweep.csv $W/off2/sweep.csv -- \
  $W/on1/sweep.csv $W/on2/sweep.csv | tee "$W/ab.md" | tee -a "$LOG"
log "A = dense off, B = RMSNorm at two vectors a thread"
python3 tools/ab_table.py $W/off1/sweep.csv $W/off2/sweep.csv -- $W/vpt2/sweep.csv \
  | grep -E "rms_norm \||fused_add|^\| op|---" | tee "$W/ab-vpt2.md" | tee -a "$LOG"
tar -C $W -czf "$OUT/r1.tar.gz" .
log "tests V (CUDA): rms_norm, rope"
run_tests tests 110 -n 14 -k cuda tests/test_rms_norm.py tests/test_rope.py
sanitize defaults 45 rms_norm rope
log done
