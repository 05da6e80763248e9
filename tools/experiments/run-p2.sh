#!/usr/bin/env bash
# Run P, device call 2, on U (03aaf70: S's kernels and the LTX_*_STAGE_MOD knob) (carry
# [".whl-h", ".prebuilt"], WHEELS=.whl-h):
#   - the staged AdaLN kernels' shared modulation rows and block size under the knobs: ours
#     alone, bf16, rms_norm, fused_add_rms_norm, adaln, gated_residual_adaln, at the defaults,
#     LTX_STAGE_BLOCK_THREADS 256 / 512, and the modulation read from global memory
#     (LTX_GATED_STAGE_MOD=0 LTX_ADALN_STAGE_MOD=0), interleaved twice; A/B tables of each against the defaults. A per-sample modulation row is staged
#     once a block: 2 rows a block at D = 2048 stage 6 KB of L2 reads a row on top of its 8 KB
#     of x and y
#   - the knob test of the modulation read, the two-level-row tests (they ran on T in call 1),
#     and compute-sanitizer memcheck and racecheck of the rope family (run O did not run it on
#     S's row_sums reduction) and of adaln with the modulation read
# Files: $OUT/p2.log, $OUT/p2.tar.gz (sweeps and A/B tables), $OUT/tests.log, sanitize-*.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start p2
use_prebuilt U | tee -a "$LOG"
OPS=rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln
SETTINGS="bt128 bt256 bt512 modread"
MODREAD=(LTX_GATED_STAGE_MOD=0 LTX_ADALN_STAGE_MOD=0)
for run in 1 2; do
  for s in $SETTINGS; do
    case $s in
      bt128) env=(LTX_STAGE_BLOCK_THREADS=128) ;;
      bt256) env=(LTX_STAGE_BLOCK_THREADS=256) ;;
      bt512) env=(LTX_STAGE_BLOCK_THREADS=512) ;;
      modread) env=("${MODREAD[@]}") ;;
    esac
    log "$s run $run: ${env[*]}"
    env "${env[@]}" timeout 60 python3 benchmarks/sweep.py --impls ltx --dtypes bf16 --ops $OPS \
      --out "$W/$s$run" 2>&1 | tail -1
  done
done
for s in bt256 bt512 modread; do
  log "A = bt128 (default), B = $s"
  python3 tools/ab_table.py $W/bt1281/sweep.csv $W/bt1282/sweep.csv -- \
    $W/${s}1/sweep.csv $W/${s}2/sweep.csv | tee "$W/ab-$s.md" | tee -a "$LOG"
done
tar -C $W -czf "$OUT/p2.tar.gz" .
log "tests U (CUDA): two-level rows beyond one wave; the knob test of the modulation read"
timeout -s INT 90 python3 -m pytest -q -p no:cacheprovider -n 8 -rf -k "cuda and two_level" \
  tests/test_rms_norm.py tests/test_adaln.py > "$OUT/tests.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests.log" | tail -10 | tee -a "$LOG"
timeout -s INT 150 python3 -m pytest -q -p no:cacheprovider -rf -k "mod-read" \
  tests/test_stage_knobs.py > "$OUT/tests-knobs.log" 2>&1
grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/tests-knobs.log" | tail -10 | tee -a "$LOG"
for tool in memcheck racecheck; do
  log "compute-sanitizer $tool: rope family; adaln with the modulation read"
  timeout 90 compute-sanitizer --tool $tool python3 tools/sanitize_ops.py rope \
    > "$OUT/sanitize-$tool.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  env "${MODREAD[@]}" LTX_ADALN_STAGE=1 LTX_GATED_STAGE=1 timeout 60 compute-sanitizer \
    --tool $tool python3 tools/sanitize_ops.py adaln > "$OUT/sanitize-$tool-adaln.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|sanitize_ops:|Error" "$OUT/sanitize-$tool.log" \
    "$OUT/sanitize-$tool-adaln.log" | tail -8 | tee -a "$LOG"
done
log done
