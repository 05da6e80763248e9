#!/usr/bin/env bash
# End-to-end runs for issue 5 on a GPU machine: one log ($OUT/e2e.log) and every run's JSON
# merged into $OUT/e2e.json ($OUT defaults to ./out). PARTS picks what runs, in its order
# (default "ltx llama blocks"):
#   ltx        LTX-Video 2B transformer, 49 frames 768x512, batch 1 x2 (CFG), bf16, 10 steps,
#              eager / compile / kernels / kernels+compile (whole model compiled), profiled
#   blocks     compile and kernels+compile with each block compiled (diffusers'
#              compile_repeated_blocks; rope tables and the head stay eager)
#   cudagraphs compile and kernels+compile with mode="reduce-overhead" (CUDA graphs), profiled
#              (TORCH_LOGS=perf_hints shows why inductor would skip a graph)
#   freeze     compile and kernels+compile with --freeze (inductor freezing), in the default
#              mode and with CUDA graphs ($FREEZE_MODES picks), profiled
#   gelu       kernels and kernels+compile (also with --freeze and CUDA graphs) with
#              --gelu-in-matmul (the feed-forward GELU in its projection's cuBLASLt epilogue)
#   best       compile and kernels+compile each at its fastest settings measured so far:
#              --freeze, each call one CUDA graph replay (--cuda-graph), cuBLASLt without a
#              workspace (--cublaslt-workspace-kib 0, both), and (kernels) --gelu-in-matmul,
#              profiled ($BEST_TAG: suffix of the runs' names)
#   compare    eager and kernels in one process (--compare), no compile ($LTX_TAG: suffix)
#   llama      LLaMA-8B-sized prefill of 4096 tokens, the four configurations, profiled
#              ($LLAMA_ARGS: more arguments, e.g. "--compile-scope model --no-reference";
#              $LLAMA_TAG: suffix of its JSON)
#   13b        the 13B LTX transformer, eager and kernels (5 steps)
#   slow       the slow-marked tests
#   transformers  the transformers example script on cuda (fp32, bf16), then the model and
#              script tests of the transformers integration, tracebacks kept short
#   tests      $TESTS (pytest arguments), e.g. "-n 8 tests" (pytest-xdist is on the device image)
#   sanitize   compute-sanitizer memcheck and racecheck over tools/sanitize_ops.py $SANITIZE
#              (op families; all when empty)
#   tune       our row kernels alone under each $TUNE setting (vectors per thread : block
#              threads, e.g. "1:256 2:256 4:256"; the first goes to $TUNE_VAR, default
#              LTX_VEC_PER_THREAD, e.g. LTX_SMALL_GRID_VEC; PERFORMANCE.md lists the knobs), sweep
#              arguments $TUNE_ARGS
#   ncu        Nsight Compute (detailed set) over tools/ncu_ops.py $NCU_CASES (op:shape ...):
#              ours and torch.compile's kernels; report and text in $OUT/ncu*
#   sweep      benchmarks/sweep.py $SWEEP_ARGS into $OUT/sweep$SWEEP_TAG
# $LTX_ARGS: more benchmark_example arguments for every LTX run (e.g. "--profile-loop 3
# --sync-debug").
# PREBUILT=NAME: no build; the CUDA extension comes from .prebuilt/NAME.tar.xz
# (tools/gpu_prebuilt.sh), for calls whose time should go to running, not compiling.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_env.sh  # $OUT, the carried wheels, the build target
PARTS=${PARTS:-ltx llama blocks}
# Per-run JSON, merged into $OUT/e2e.json after each run. One folder per machine, so that
# several invocations in one device call (PARTS=a ...; PARTS=b ...) all reach e2e.json; few
# files come back from a lease, so it is not under $OUT.
J=${TMPDIR:-/tmp}/ltx-e2e-runs
mkdir -p "$J"
status=0
if [[ -n ${PREBUILT:-} ]]; then  # the extension built elsewhere, carried in .prebuilt/
  source tools/gpu_prebuilt.sh
  use_prebuilt "$PREBUILT" || exit 1
  python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 || exit 1  # seconds
else
  python3 tools/build.py --backends cuda,cpu -j 16 2>&1 | tail -1 || exit 1
fi
quiet() { grep --line-buffered -v -e "^WARNING:kernels" -e "built from a dirty git tree" \
  -e "should be kept in float32" -e "_warn_once" -e "Profiler clears events" \
  -e "No kernel mapping found for layer"; }
LTX=(--num-frames 49 --height 512 --width 768 --batch-size 1 --cfg --steps 10
     --warmup-iterations 2 --no-progress ${LTX_ARGS:-})
merge() {  # every run's JSON so far into $OUT/e2e.json (kept if the lease's limit hits)
  python3 - "$J" "$OUT/e2e.json" <<'PY'
import json, sys
from pathlib import Path
runs = {p.stem: json.loads(p.read_text()) for p in sorted(Path(sys.argv[1]).glob("*.json"))}
Path(sys.argv[2]).write_text(json.dumps(runs, indent=1))
PY
}
run() {  # name, command...: runs it, appends to $OUT/e2e.log, keeps the worst status
  local name=$1; shift
  echo "== $name: $* ($(date +%T))" | tee -a "$OUT/e2e.log"
  "$@" 2>&1 | quiet | tee -a "$OUT/e2e.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || { echo "== $name FAILED" | tee -a "$OUT/e2e.log"; status=1; }
  merge
}
# -v: one line per test as it finishes, so a log cut by the lease's limit still names each
# result (a cut -q log shows only dots and Fs).
part_tests() { run tests python3 -m pytest -v -p no:cacheprovider ${TESTS:-tests}; }
part_transformers() {
  for dt in fp32 bf16; do
    run "transformers-example-$dt" python3 scripts/transformers_injection_example.py \
      --device cuda --dtype $dt
  done
  run transformers-tests python3 -m pytest -v -p no:cacheprovider -n 8 --tb=short \
    tests/test_models.py tests/test_scripts.py -k "transformers or kernelize or falcon or rope"
}
part_slow() { run slow-tests python3 -m pytest -v -p no:cacheprovider -m slow tests; }
part_ltx() {
  run ltx2b python3 scripts/benchmark_example.py "${LTX[@]}" --all-configs --profile \
    --json "$J/ltx2b.json"
}
part_compare() {  # eager and kernels, one process ($LTX_TAG: suffix of its name and JSON)
  ltx_run "ltx2b-compare${LTX_TAG:-}" --compare
}
part_llama() {
  run llama8b python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --profile --json "$J/llama8b${LLAMA_TAG:-}.json" ${LLAMA_ARGS:-}
}
baseline() { [[ -f "$J/ltx2b.json" ]] && echo --baseline-json "$J/ltx2b.json"; }
ltx_run() {  # name, benchmark_example arguments: one LTX run after part ltx's, its JSON named
  # after it
  local name=$1; shift
  run "$name" python3 scripts/benchmark_example.py "${LTX[@]}" "$@" $(baseline) \
    --json "$J/$name.json"
}
ltx_compiled() {  # name, benchmark_example arguments: compile, then kernels + compile, with them
  # ($COMPILED_KERNELS: which of the two, default both)
  local name=$1; shift
  for k in ${COMPILED_KERNELS:-no-use-optimized-kernels use-optimized-kernels}; do
    ltx_run "ltx2b-$name-${k%%-*}" --compile --$k "$@"
  done
}
part_blocks() { ltx_compiled blocks --compile-scope blocks; }
part_cudagraphs() { ltx_compiled cg --compile-mode reduce-overhead --profile; }
part_freeze() {  # the compiled configurations with the weights frozen into the graph, in the
  # modes of $FREEZE_MODES (default "default reduce-overhead")
  for mode in ${FREEZE_MODES:-default reduce-overhead}; do
    local m=(); [[ $mode == default ]] || m=(--compile-mode "$mode")
    ltx_compiled "freeze-$mode" --freeze "${m[@]}" --profile
  done
}
part_gelu() {  # the feed-forward GELU in its projection's cuBLASLt epilogue: kernels, k + c,
  # and k + c with freezing and CUDA graphs
  local g=(--gelu-in-matmul --profile)
  ltx_run ltx2b-gelu-kernels "${g[@]}"
  ltx_run ltx2b-gelu-kc --compile "${g[@]}"
  ltx_run ltx2b-gelu-kc-freeze-cg --compile --freeze --compile-mode reduce-overhead "${g[@]}"
}
part_best() {  # ($BEST_TAG: suffix of its runs' names and JSON)
  ltx_compiled "best${BEST_TAG:-}" --freeze --cuda-graph --cublaslt-workspace-kib 0 \
    --gelu-in-matmul --profile
}
part_sanitize() {
  for tool in memcheck racecheck; do
    run "sanitize-$tool" compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 tools/sanitize_ops.py ${SANITIZE:-}
  done
}
part_tune() {
  local var=${TUNE_VAR:-LTX_VEC_PER_THREAD}
  for setting in ${TUNE:-2:256 4:256}; do
    export "$var=${setting%%:*}" LTX_BLOCK_THREADS=${setting##*:}
    run "tune-$var-$setting" python3 benchmarks/sweep.py --impls ltx \
      --out "$OUT/tune-${setting/:/-}" ${TUNE_ARGS:---quick}
    unset "$var" LTX_BLOCK_THREADS
  done
}
part_ncu() {
  run ncu ncu --clock-control none --nvtx --nvtx-include "prof/" --set detailed \
    -o "$OUT/ncu" -f python3 tools/ncu_ops.py ${NCU_CASES:-adaln:2x2688x2048}
  ncu --import "$OUT/ncu.ncu-rep" --page details > "$OUT/ncu-details.txt" 2>&1
  ncu --import "$OUT/ncu.ncu-rep" --page raw --csv --metrics \
    gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,launch__occupancy_limit_registers,\
smsp__inst_executed.sum > "$OUT/ncu-summary.csv" 2>&1
  python3 - "$OUT/ncu-summary.csv" <<'PY' | tee -a "$OUT/e2e.log"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
if hdr is None:
    print(open(sys.argv[1]).read()[-2000:]); sys.exit()
h = rows[hdr]
want = ["Kernel Name", "gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes_read.sum", "dram__bytes_write.sum", "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__registers_per_thread", "launch__grid_size", "launch__block_size", "smsp__inst_executed.sum"]
idx = [h.index(w) for w in want if w in h]
for r in rows[hdr + 2:]:  # skip the units row
    if len(r) == len(h):
        print(" | ".join(r[i][:60] for i in idx))
PY
}
part_sweep() {
  run "sweep${SWEEP_TAG:-}" python3 benchmarks/sweep.py --out "$OUT/sweep${SWEEP_TAG:-}" \
    ${SWEEP_ARGS:---quick}
}
part_13b() {
  run ltx13b python3 scripts/benchmark_example.py "${LTX[@]}" --model-size 13b \
    --use-optimized-kernels --compare --steps 5 --json "$J/ltx13b.json"
}
for part in $PARTS; do  # in the order given
  declare -F "part_$part" >/dev/null || { echo "unknown part $part"; exit 2; }
  "part_$part"
done
exit $status
