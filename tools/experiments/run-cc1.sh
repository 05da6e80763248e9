#!/usr/bin/env bash
# Run CC, device call 1, on B1 (HEAD's kernels with LTX_RMS_DENSE_LATE unset; carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h). Three questions, in the order they could change a
# kernel this session:
#   1. RMSNorm at D = 8192 (and 4096 beyond the dense path's 44 MiB) is the register path's
#      4 vectors a thread in blocks of 256: run Z's table has it at 94% of the copy where
#      torch.compile reaches 98% (1x16384x8192: 135.6 against 130.0 us) and 0.96x at
#      1x4096x8192; fused_add_rms_norm there (the dense path, 2 vectors a thread in 512) 0.98x
#      Liger. That path was tuned at D <= 3072 only (change 3). Knob A/B of ours alone: the
#      defaults, 2 and 8 vectors a thread (LTX_VEC_PER_THREAD), and fused_add_rms_norm on the
#      register path (LTX_RMS_DENSE=0); then Nsight Compute (full set) of ours and compile's
#      kernel at the two D = 8192 shapes, and the kernel inductor writes for them
#      (TORCH_LOGS=output_code), to see its layout.
#   2. Run BB's open question (run-bb5.sh, written last session, not run): is Liger's 9-10%
#      gain in sweeps that also time torch.compile the neighbour in the order or the process?
#   3. Where ours meets a full L2 worse than Liger (2x2688x2048: 13.3 against 12.2 us after the
#      read flush, run AA): Nsight Compute's WarpStateStats and MemoryWorkloadAnalysis sections
#      with the read flush in place (application replay), ours and Liger.
# Files: $OUT/cc1.log, $OUT/cc1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start cc1
use_prebuilt B1 | tee -a "$LOG"

LONG=1x4096x8192,1x16384x8192,1x16384x4096,8x8192x4096
log "A/B: long rows, ours alone, bf16, 2 rounds a sweep"
AB_ARGS="--rounds 2 --shapes $LONG" AB_DTYPES=bf16 AB_SWEEP_LIMIT=45 \
  knob_ab rms_norm,fused_add_rms_norm "$W/ab" "def=" "v2=LTX_VEC_PER_THREAD=2" \
  "v8=LTX_VEC_PER_THREAD=8" "reg=LTX_RMS_DENSE=0" | tee -a "$LOG"
tar -C "$W" -czf "$OUT/ab.tar.gz" ab

if fits 60; then
  log "inductor's kernels at D = 8192 and 2x2688x2048 (TORCH_LOGS=output_code), and ours / compile / Liger timed"
  TORCH_LOGS=output_code timeout 60 python3 benchmarks/sweep.py --ops rms_norm,fused_add_rms_norm \
    --shapes 1x16384x8192,2x2688x2048 --impls ltx,compile,liger --dtypes bf16 --rounds 2 \
    --out "$W/ind" > "$OUT/inductor.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "^\| [a-z_]+ \| [0-9x]+ \| bf16 \|" "$W/ind/sweep.md" | tee -a "$LOG"
  grep -E "triton_(per|red)_fused|XBLOCK|R0_BLOCK|RBLOCK|num_warps" "$OUT/inductor.log" \
    | sort | uniq -c | head -30 | tee -a "$LOG"
fi

if fits 90; then
  log "ncu full set: ours and compile at D = 8192"
  NCU_IMPLS=ltx,compile,liger NCU_LIMIT=90 ncu_full rms_norm:1x16384x8192 rms_norm:1x4096x8192 \
    fused_add_rms_norm:1x16384x8192
fi

for order in liger,ltx,compile ltx,compile,liger liger,ltx,eager; do
  fits 35 || break
  log "neighbours: order $order"
  timeout 45 python3 tools/experiments/rms_norm_neighbours.py --order "$order" 2>&1 \
    | grep -E "^order|Error|error" | tee -a "$LOG"
done

if fits 150; then
  log "ncu sections with the read flush: ours and Liger at 2x2688x2048"
  NCU_SECTIONS="SpeedOfLight WarpStateStats MemoryWorkloadAnalysis" \
    ncu_flush sections read ltx,liger 150 rms_norm:2x2688x2048
fi
experiment_end
