#!/usr/bin/env bash
# Run U, device call 1, on U0 (HEAD's CUDA source = run T's final, D) (carry [".whl-h",
# ".prebuilt"], WHEELS=.whl-h):
#   - where the host's time goes in LTX-Video 2B steps, kernels and eager (tools/host_profile.py:
#     cProfile of steps one by one), the configuration that is host-bound
#   - RMSNorm ours against Liger with the method's floor (--floor-ref) at 1-1024 tokens and the
#     shapes where Liger leads, the L2 flushed by zeroing (the table's method) and by a read
#   - the dense RMSNorm path's layouts beyond 8 MiB (knobs: dense everywhere, two vectors a
#     thread, 256-thread blocks), ours alone
#   - every op's bf16 shapes, ours beside torch's plain elementwise kernel moving the same
#     bytes (--stream-ref): what a streaming kernel reaches at each size under this method
#   - the CUDA tests of the rope family (run T's were cut at 100 s)
# Files: $OUT/u1.log (summary), $OUT/u1.tar.gz (sweeps, host profiles), $OUT/tests-rope.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start u1
use_prebuilt U0 | tee -a "$LOG"
log "host profile, LTX 2B, kernels and eager"
timeout 150 python3 tools/host_profile.py --configs kernels,eager --num-frames 49 --height 512 \
  --width 768 --batch-size 1 --cfg --steps 6 --profile-steps 2 --top 30 \
  --json "$W/host.json" > "$W/host.log" 2>&1
echo "rc $?" | tee -a "$LOG"
head -c 12000 "$W/host.log" >> "$LOG"
SMALL=1x1x4096,1x16x4096,1x128x4096,1x1024x2048,1x1024x4096,2x2688x2048,1x4096x4096
for flush in zero read; do
  log "rms_norm ours, Liger and the floor, flush $flush"
  timeout 60 python3 benchmarks/sweep.py --ops rms_norm --dtypes bf16 --shapes $SMALL \
    --impls ltx,liger,floor --floor-ref --flush $flush --out "$W/rms-$flush" 2>&1 | tail -1
  grep -E "^\| rms_norm" "$W/rms-$flush/sweep.md" | tee -a "$LOG"
done
knob() {  # name, env...: rms_norm ours alone with the knobs set
  local name=$1; shift
  log "rms_norm ours, $name: $*"
  env "$@" timeout 60 python3 benchmarks/sweep.py --ops rms_norm --dtypes bf16 --impls ltx \
    --out "$W/knob-$name" 2>&1 | tail -1
  grep -E "^\| rms_norm" "$W/knob-$name/sweep.md" | tee -a "$LOG"
}
knob default LTX_NOTHING=1
knob dense LTX_RMS_DENSE_MAX_MB=0
knob dense-vpt2 LTX_RMS_DENSE_MAX_MB=0 LTX_RMS_DENSE_VPT=2
knob dense-vpt2-256 LTX_RMS_DENSE_MAX_MB=0 LTX_RMS_DENSE_VPT=2 LTX_DENSE_BLOCK_THREADS=256
knob dense-256 LTX_RMS_DENSE_MAX_MB=0 LTX_DENSE_BLOCK_THREADS=256
knob default-2 LTX_NOTHING=2
log "every op, bf16: ours and the streaming reference"
timeout 150 python3 benchmarks/sweep.py --dtypes bf16 --impls ltx,stream --stream-ref \
  --out "$W/stream" 2>&1 | tail -1
grep -E "^\| [a-z_]+ \| [0-9x]+ \| bf16 \|" "$W/stream/sweep.md" | tee -a "$LOG"
log "tests U0 (CUDA): rope family"
run_tests tests-rope 200 -n 16 -k cuda tests/test_rope.py
tar -C $W -czf "$OUT/u1.tar.gz" .
log done
