#!/usr/bin/env bash
# Run T, device call 2, on D (HEAD: rms_norm_rope.cu with LTX_LOAD_ONCE 2, the rest plain)
# (carry [".whl-t", ".prebuilt"], WHEELS=.whl-t):
#   - CUDA tests of the rope family (rope, rms_norm_rope: against float64 references) and the
#     back-to-back chains; compute-sanitizer memcheck and racecheck of the rope family
#   - the norm + rope ops with every peer, bf16 and fp16 (the table's rows)
#   - Nsight Compute, full set: RMSNorm ours against Liger at 2x2688x2048, 1x1024x4096 and
#     1x4096x4096 (the shapes where Liger leads by 10-16%), at the defaults (staged beyond 8
#     MiB) and with the dense path at every size (LTX_RMS_DENSE_MAX_MB=0); rope_qk ours
#     against torch.compile at 16 and 1024 tokens
# Files: $OUT/t2.log (summary), $OUT/t2.tar.gz (sweeps, ncu text and CSV), $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start t2
use_prebuilt D | tee -a "$LOG"
log "tests D (CUDA): rope family, launch chains"
run_tests tests 100 -n 16 -k cuda tests/test_rope.py tests/test_launch.py
sanitize rope 60 rope
OPS=rms_norm_rope,rms_norm_rope_qk,rms_norm_rope_qk_shared,rms_norm_rope_qk_pairs
peer_sweeps $OPS "$W" 70 bf16 fp16
ncu_into() {  # name, cases...: ncu_full's files moved into $W/ncu-NAME-*
  local name=$1; shift
  log "ncu ($name, NCU_IMPLS=$NCU_IMPLS): $*"
  NCU_LIMIT=100 ncu_full "$@" > /dev/null  # its main lines go to $LOG
  for f in ncu-details.txt ncu-summary.csv ncu.log; do mv "$OUT/$f" "$W/ncu-$name-$f"; done
  cat "$W/ncu-$name-ncu-summary.csv" >> "$LOG"
}
RMS=(rms_norm:2x2688x2048 rms_norm:1x1024x4096 rms_norm:1x4096x4096)
NCU_IMPLS=ltx,liger ncu_into rms-default "${RMS[@]}"
NCU_IMPLS=ltx LTX_RMS_DENSE_MAX_MB=0 ncu_into rms-dense "${RMS[@]}"
NCU_IMPLS=ltx,compile ncu_into rope rope_qk:1x32x16x128 rope_qk:1x32x1024x128
tar -C $W -czf "$OUT/t2.tar.gz" .
log done
