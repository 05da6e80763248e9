#!/usr/bin/env bash
# Run U, device call 2, on U1 (rms_norm's rows of up to 512 vectors: the dense path in
# 256-thread blocks of two vectors a thread up to 44 MiB of x; the LTX injection's attention
# processors called directly and the cross-attention mask prepared once a forward) against
# U0 (run T's final source) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - rms_norm and fused_add_rms_norm ours, U0 / U1 / U0 / U1, bf16 and fp16
#   - fused_add_rms_norm under the short layout's knobs (two vectors a thread, 256 threads)
#   - rms_norm ours with every peer, bf16 and fp16 (the table's rows), then ours and Liger
#     alone (run U call 1 found them level where the table had Liger 10-16% ahead)
#   - CUDA tests of rms_norm (defaults and the dense knob settings), compute-sanitizer of the
#     rms_norm family
#   - LTX-Video 2B eager and kernels (one process, the loop profiled), and the host profile
#     of the kernels configuration
# Files: $OUT/u2.log (summary), $OUT/u2.tar.gz (sweeps, host profile), $OUT/e2e.{log,json},
# $OUT/tests*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start u2
AB_DTYPES=bf16,fp16 AB_SWEEP_LIMIT=40 prebuilt_ab U0 U1 rms_norm,fused_add_rms_norm "$W/ab" \
  | tee -a "$LOG"
use_prebuilt U1 | tee -a "$LOG"
for v in 1 2; do
  log "fused_add_rms_norm ours, U1, LTX_RMS_DENSE_VPT=$v LTX_RMS_DENSE_THREADS=$((v == 2 ? 256 : 512))"
  LTX_RMS_DENSE_VPT=$v LTX_RMS_DENSE_THREADS=$((v == 2 ? 256 : 512)) timeout 40 \
    python3 benchmarks/sweep.py --ops fused_add_rms_norm --dtypes bf16 --impls ltx \
    --out "$W/fadd-vpt$v" 2>&1 | tail -1
  grep -E "^\| fused_add" "$W/fadd-vpt$v/sweep.md" | tee -a "$LOG"
done
peer_sweeps rms_norm "$W" 90 bf16 fp16
log "rms_norm ours and Liger alone, bf16"
timeout 40 python3 benchmarks/sweep.py --ops rms_norm --dtypes bf16 --impls ltx,liger \
  --out "$W/rms-liger" 2>&1 | tail -1
grep -E "^\| rms_norm" "$W/rms-liger/sweep.md" | tee -a "$LOG"
log "tests U1 (CUDA): rms_norm, the rms knob settings"
run_tests tests-rms 120 -n 16 -k cuda tests/test_rms_norm.py
run_tests tests-knobs 150 -k "rms or dense-row-blocks" tests/test_stage_knobs.py
sanitize rms 60 rms_norm
log "LTX 2B eager and kernels (U1)"
PREBUILT=U1 PARTS=compare LTX_ARGS="--profile-loop 3" timeout 120 bash tools/gpu_e2e.sh \
  > /dev/null 2>&1
echo "gpu_e2e rc $?" | tee -a "$LOG"
grep -E "^==|ms/step|over the loop|against|  (eager|kernels) |timeline|per step of the loop|host-bound idle|GPU state" \
  "$OUT/e2e.log" | tee -a "$LOG"
log "host profile, kernels (U1)"
timeout 90 python3 tools/host_profile.py --configs kernels --num-frames 49 --height 512 \
  --width 768 --batch-size 1 --cfg --steps 6 --profile-steps 2 --top 30 \
  --json "$W/host.json" > "$W/host.log" 2>&1
echo "rc $?" | tee -a "$LOG"
head -c 6000 "$W/host.log" >> "$LOG"
tar -C $W -czf "$OUT/u2.tar.gz" .
log done
