#!/usr/bin/env bash
# The one command for a GPU machine (the project's H200 lease): install the carried wheels,
# build the CUDA (sm_90 only, to save time) and CPU variants, run the whole test suite,
# compute-sanitizer over every CUDA op, and the bandwidth sweep. Logs go to $OUT (or ./out).
#
#   bash tools/gpu_run.sh [sweep arguments...]      e.g. bash tools/gpu_run.sh --quick
#
# Steps can be skipped with SKIP="tests sanitize sweep"; TESTS="tests/test_x.py ..." narrows
# the test step; TUNE="4:256 8:256 ..." (vectors per thread : block threads) times our row
# kernels under each setting (LTX_VEC_PER_THREAD / LTX_BLOCK_THREADS) before the sweep.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_env.sh  # $OUT, the carried wheels, the build target
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
status=0

{ nvidia-smi; python3 -c "import torch, sys; print(sys.version); print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name())"; nvcc --version | tail -1; } > "$OUT/env.txt" 2>&1
time python3 tools/build.py --backends cuda,cpu -j 16 2>&1 | tee "$OUT/build.log" || exit 1

if ! skip tests; then
  # -v in the log: a run cut by the lease limit still names every finished test
  python3 -m pytest -v -p no:cacheprovider ${TESTS:-tests} 2>&1 | tee "$OUT/tests.log" \
    | grep -E "FAILED|ERROR|passed|failed" | tail -40
  rc=${PIPESTATUS[0]}
  [[ $rc -eq 0 ]] || status=1
  if [[ $rc -ge 128 ]]; then  # killed by a signal: a native backtrace of the crash
    cuda-gdb -batch -ex run -ex bt --args python3 -m pytest -x -q -p no:cacheprovider \
      ${CRASH_TESTS:-tests} > "$OUT/crash-bt.log" 2>&1
    grep -A30 "received signal" "$OUT/crash-bt.log" | head -40
  fi
fi
if ! skip sanitize; then
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 python3 tools/sanitize_ops.py \
      > "$OUT/sanitize-$tool.log" 2>&1
    rc=$?
    echo "compute-sanitizer $tool: exit $rc; $(grep -E 'ERROR SUMMARY|sanitize_ops:' "$OUT/sanitize-$tool.log" | tr '\n' ' ')"
    [[ $rc -eq 0 ]] || status=1
  done
fi
if [[ -n "${TUNE:-}" ]]; then
  for setting in $TUNE; do
    echo "== tune LTX_VEC_PER_THREAD=${setting%%:*} LTX_BLOCK_THREADS=${setting##*:}"
    LTX_VEC_PER_THREAD=${setting%%:*} LTX_BLOCK_THREADS=${setting##*:} \
      python3 benchmarks/sweep.py --impls ltx --out "$OUT/tune-${setting/:/-}" "$@" 2>&1 \
      | grep -E '^\[' | sed 's/ -> .*//'
  done 2>&1 | tee "$OUT/tune.log"
fi
if ! skip sweep; then
  python3 benchmarks/sweep.py --out "$OUT" "$@" 2>&1 | tee "$OUT/sweep.log" | tail -60
fi
exit $status
