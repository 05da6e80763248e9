#!/usr/bin/env bash
# Run Q, device call 1, on Q (the AdaLN kernels' dense path, on by default beyond one wave on
# sm_90) (carry [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the CUDA tests of adaln; the knob tests of the dense path (every grid; one-row blocks)
#   - ours alone with the dense path on (the default), off (LTX_ADALN_DENSE=0
#     LTX_GATED_DENSE=0: the staged and register paths, run O's) and at every grid (=1: the
#     one-wave grids too), interleaved twice, bf16 and fp16: adaln, adaln_per_token,
#     gated_residual_adaln; the A/B tables against off
#   - ours and torch.compile in one sweep, bf16, the same ops
#   - compute-sanitizer memcheck and racecheck of the adaln family with the dense path forced
#     at every grid; Nsight Compute of ours and compile's at LTX's shape (gated and plain)
# Files: $OUT/q1.log (summary), $OUT/q1.tar.gz (sweeps, A/B table), $OUT/tests*.log,
# $OUT/sanitize-*.log, $OUT/ncu-*.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start q1
use_prebuilt Q | tee -a "$LOG"
OPS=adaln,adaln_per_token,gated_residual_adaln
OFF=(LTX_ADALN_DENSE=0 LTX_GATED_DENSE=0)
ALL=(LTX_ADALN_DENSE=1 LTX_GATED_DENSE=1)
for run in 1 2; do
  for s in on off all; do
    env=(LTX_NONE=1)
    [[ $s == off ]] && env=("${OFF[@]}")
    [[ $s == all ]] && env=("${ALL[@]}")
    log "ours, dense $s, run $run"
    env "${env[@]}" timeout 70 python3 benchmarks/sweep.py --impls ltx --dtypes bf16,fp16 \
      --ops $OPS --out "$W/$s$run" 2>&1 | tail -1
  done
done
log "A = dense off (run O's paths), B = dense on (default)"
python3 tools/ab_table.py $W/off1/sweep.csv $W/off2/sweep.csv -- \
  $W/on1/sweep.csv $W/on2/sweep.csv | tee "$W/ab.md" | tee -a "$LOG"
log "A = dense off, B = dense at every grid (one-wave grids too)"
python3 tools/ab_table.py $W/off1/sweep.csv $W/off2/sweep.csv -- \
  $W/all1/sweep.csv $W/all2/sweep.csv | tee "$W/ab-all.md" | tee -a "$LOG"
log "tests Q (CUDA): adaln"
run_tests tests 150 -n 14 -k cuda tests/test_adaln.py
log "knob tests: the dense path at every grid, in one-row blocks"
run_tests tests-knobs 200 -k dense tests/test_stage_knobs.py
log "ours and compile, bf16, $OPS"
timeout 150 python3 benchmarks/sweep.py --impls ltx,compile --dtypes bf16 --ops $OPS \
  --out "$W/peers" 2>&1 | tail -1
tail -60 "$W/peers/sweep.md" | tee -a "$LOG"
tar -C $W -czf "$OUT/q1.tar.gz" .
LTX_ADALN_DENSE=1 LTX_GATED_DENSE=1 sanitize dense 70 adaln
NCU_IMPLS=ltx,compile NCU_LIMIT=120 ncu_full gated_residual_adaln:2x2688x2048 adaln:2x2688x2048
log done
