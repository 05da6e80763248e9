# Sourced on a GPU machine after tools/gpu_env.sh: use_prebuilt NAME puts the sm_90 extension
# built on the development machine (.prebuilt/NAME.tar.xz, carried; no build on the device)
# in place as build/$PREBUILT_VARIANT, with the tree's Python package copied over it, so that
# only the compiled library comes from the archive. Make an archive here with
#   LTX_CUDA_CAPABILITIES=9.0 <torch 2.11+cu130 python> tools/build.py --backends cuda --no-ptx
#   tar -C build -cJf .prebuilt/NAME.tar.xz torch211-cxx11-cu130-x86_64-linux
PREBUILT_VARIANT=${PREBUILT_VARIANT:-torch211-cxx11-cu130-x86_64-linux}
use_prebuilt() {
  [[ -f .prebuilt/$1.tar.xz ]] || { echo "no .prebuilt/$1.tar.xz (carry .prebuilt)" >&2; return 1; }
  rm -rf "build/$PREBUILT_VARIANT"
  mkdir -p build && tar -C build -xJf ".prebuilt/$1.tar.xz" || return 1
  # What tools/build.py's assemble() copies: no caches, and not a stale generated _ops.py (it
  # names another build's op namespace).
  tar -C torch-ext/ltx_kernels --exclude=__pycache__ --exclude="*.pyc" --exclude=_ops.py -cf - . \
    | tar -C "build/$PREBUILT_VARIANT" -xf - || return 1
  echo "== prebuilt $1: $(ls build/$PREBUILT_VARIANT/*.so | xargs -n1 basename)"
}

# prebuilt_ab A B OPS DIR: our kernels alone (benchmarks/sweep.py --impls ltx, in the dtypes
# ${AB_DTYPES:-bf16,fp16}, the comma-separated OPS) from prebuilt A, B, A, B on one lease, into
# DIR/{A1,B1,A2,B2}; then tools/ab_table.py of both sides (two runs each) into DIR/ab.md and on
# stdout.
# ${AB_SWEEP_LIMIT:-60} seconds a sweep.
prebuilt_ab() {
  local a=$1 b=$2 ops=$3 dir=$4 run side
  for run in 1 2; do
    for side in "$a" "$b"; do
      use_prebuilt "$side" > /dev/null || return 1
      echo "== $side run $run: ours, $ops ($(date +%T))"
      timeout "${AB_SWEEP_LIMIT:-60}" python3 benchmarks/sweep.py --impls ltx \
        --dtypes "${AB_DTYPES:-bf16,fp16}" --ops "$ops" --out "$dir/$side$run" 2>&1 | tail -1
    done
  done
  python3 tools/ab_table.py "$dir/${a}1/sweep.csv" "$dir/${a}2/sweep.csv" -- \
    "$dir/${b}1/sweep.csv" "$dir/${b}2/sweep.csv" | tee "$dir/ab.md"
}

# knob_ab OPS DIR NAME=ENV...: our kernels alone (benchmarks/sweep.py --impls ltx, in the dtypes
# ${AB_DTYPES:-bf16,fp16}) from the build in place, under each knob setting NAME (ENV: VAR=VALUE
# pairs separated by commas, empty for the defaults), every setting twice on one lease, the
# second round in reverse order, into DIR/NAME{1,2}; then tools/ab_table.py of the first setting
# against each other one into DIR/ab-NAME.md and on stdout. ${AB_SWEEP_LIMIT:-60} seconds a
# sweep. AB_PEER=NAME: that peer timed too in every sweep (--impls ltx,NAME) and the tables'
# peer columns (ab_table.py --peer); AB_ARGS: more sweep arguments (e.g. --rounds 2).
knob_ab() {
  local ops=$1 dir=$2 run i j n spec name envs base
  shift 2
  local specs=("$@")
  n=${#specs[@]}
  for run in 1 2; do
    for ((j = 0; j < n; j++)); do
      i=$((run == 1 ? j : n - 1 - j))
      spec=${specs[$i]}
      name=${spec%%=*}
      envs=${spec#*=}
      echo "== $name run $run: ours, $ops, ${envs:-defaults} ($(date +%T))"
      env ${envs//,/ } timeout "${AB_SWEEP_LIMIT:-60}" python3 benchmarks/sweep.py \
        --impls "ltx${AB_PEER:+,$AB_PEER}" ${AB_ARGS:-} --dtypes "${AB_DTYPES:-bf16,fp16}" \
        --ops "$ops" --out "$dir/$name$run" 2>&1 | tail -1
    done
  done
  base=${specs[0]%%=*}
  for ((i = 1; i < n; i++)); do
    name=${specs[$i]%%=*}
    echo "== $base against $name"
    python3 tools/ab_table.py ${AB_PEER:+--peer $AB_PEER} "$dir/${base}1/sweep.csv" \
      "$dir/${base}2/sweep.csv" -- "$dir/${name}1/sweep.csv" "$dir/${name}2/sweep.csv" \
      | tee "$dir/ab-$name.md"
  done
}

# prebuilt_faster AB_MD OP SHAPE DTYPE A B: A or B, whichever is faster at that case of
# prebuilt_ab's table (B when B / A < 1; nothing when the case is missing).
prebuilt_faster() {
  awk -F'|' -v op="$2" -v shape="$3" -v dt="$4" -v a="$5" -v b="$6" '
    { gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4) }
    $2 == op && $3 == shape && $4 == dt { print ($7 + 0 < 1.0) ? b : a }' "$1"
}

# peer_sweeps OPS DIR LIMIT DTYPE...: ours and every peer (benchmarks/sweep.py) for the
# comma-separated OPS, one sweep a dtype under LIMIT seconds, into DIR/peers-DTYPE; each
# table's rows (the ops' rows, not only the header) to $LOG. Extra sweep arguments in
# ${PEER_ARGS:-}.
peer_sweeps() {
  local ops=$1 dir=$2 limit=$3 dt
  shift 3
  for dt in "$@"; do
    log "$ops: ours and every peer, $dt"
    timeout "$limit" python3 benchmarks/sweep.py --dtypes "$dt" --ops "$ops" ${PEER_ARGS:-} \
      --out "$dir/peers-$dt" 2>&1 | tail -1
    grep -E "^\| [a-z_]+ \| [0-9x]+ \| $dt \|" "$dir/peers-$dt/sweep.md" 2>/dev/null \
      | tee -a "$LOG"
  done
}

# experiment_start NAME: what every device-call script (tools/experiments/run-*.sh) starts with:
# the call's start for `fits` (CALL_T0), LOG=$OUT/NAME.log, a work folder W=/tmp/NAME, log MESSAGE (a timestamped line on stdout and in
# $LOG), the GPU's clocks and power limit, and the CPU build (the tests import it).
experiment_start() {
  CALL_T0=$(date +%s)
  LOG=$OUT/$1.log
  W=/tmp/$1
  mkdir -p "$W"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.limit --format=csv \
    | tee -a "$LOG"
  python3 tools/build.py --backends cpu -j 16 2>&1 | tail -1 | tee -a "$LOG"
}
log() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }

# fits SECONDS: whether a step of that many seconds ends before ${CALL_BUDGET:-560} s after
# experiment_start (the lease's limit is 600 s a call, and a call cut by it brings back only
# what it packed); logs the skip otherwise. For the later, optional steps of a device call.
fits() {
  (( $(date +%s) - CALL_T0 + $1 < ${CALL_BUDGET:-560} )) && return 0
  log "skipped (no time left for a ${1} s step)"
  return 1
}

# time_left [BUDGET]: the seconds a last step may take before BUDGET (default
# ${CALL_BUDGET:-560}) s after experiment_start, 15 s kept for packing the files.
time_left() {
  echo $(( ${1:-${CALL_BUDGET:-560}} - ($(date +%s) - CALL_T0) - 15 ))
}

# The LTX-Video setting of issue 5's runs since run LL, for ltx_e2e / ltx_time
# (LTX_E2E_ARGS=$LTX_ISSUE5_ARGS): CUDA graphs, inductor's freezing, the GELU in the matmul, one
# q / k / v product for the kernels configurations, cuBLASLt's workspace at 0; and our kernels
# whose profile lines ltx_e2e copies to $LOG (LTX_E2E_KERNELS=$LTX_ISSUE5_KERNELS).
LTX_ISSUE5_ARGS="--cuda-graph --freeze --gelu-in-matmul --fuse-projections --cublaslt-workspace-kib 0"
LTX_ISSUE5_KERNELS="rms_norm_dense|gated_residual_flat|adaln_dense|rms_norm_rope_dense"

# ltx_e2e NAME LIMIT ARGS...: scripts/benchmark_example.py at the LTX-Video target setting (49
# frames 768x512, batch 1 x2 (CFG), 10 steps after 2 warmup, profiled: one step and 3 of the
# loop) with ${LTX_E2E_ARGS:-} and ARGS, under LIMIT seconds, into $OUT/NAME.{log,json}; its
# main lines (times, profile categories, the kernels in ${LTX_E2E_KERNELS:-}) to $LOG.
ltx_e2e() {
  local name=$1 limit=$2
  shift 2
  log "LTX 2B: $name: ${LTX_E2E_ARGS:-} $*"
  timeout "$limit" python3 scripts/benchmark_example.py --num-frames 49 --height 512 \
    --width 768 --batch-size 1 --cfg --steps 10 --warmup-iterations 2 --no-progress --profile \
    --profile-loop 3 ${LTX_E2E_ARGS:-} --json "$OUT/$name.json" "$@" > "$OUT/$name.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "ms/step|over the loop|against|^    (eager|compile|kernels)|^  profile of|^    (gemm|attention|ours|inductor|copy|other) |per step of the loop|GPU state|TOO LARGE|Error|error${LTX_E2E_KERNELS:+|$LTX_E2E_KERNELS}" \
    "$OUT/$name.log" | tee -a "$LOG"
}


# full_table DTYPE LIMIT: issue 4's full table in one dtype (benchmarks/sweep.py, every op,
# shape and peer, 3 rounds in the default shuffled order, --monitor) under LIMIT seconds, into
# $W/full-DTYPE (partial results survive the limit), its log $OUT/sweep-DTYPE.log; the case
# count and tools/targets.py's counts to $LOG, the table packed into $OUT/sweeps-DTYPE.tar.gz.
# Where the limit left a CSV without its plot (run UU: it struck while the plot was drawn, after
# the last case), benchmarks/report.py draws it from the CSV (~4 s), so the table always
# travels with its plot.
full_table() {
  local dt=$1 d=$W/full-$1
  log "full sweep, $dt, every op and peer, 3 rounds in shuffled order, --monitor"
  timeout "$2" python3 benchmarks/sweep.py --dtypes "$dt" --rounds 3 --order shuffle --monitor \
    --out "$d" > "$OUT/sweep-$dt.log" 2>&1
  echo "rc $? ($(grep -c '^\[' "$OUT/sweep-$dt.log") cases)" | tee -a "$LOG"
  if [[ -f $d/sweep.csv ]] && ! compgen -G "$d/*.png" > /dev/null; then
    python3 benchmarks/report.py "$d/sweep.csv" --out "$d" > /dev/null \
      && log "the plot drawn from the CSV (the limit cut the sweep's own)"
  fi
  python3 tools/targets.py "$d/sweep.csv" | tee -a "$LOG"
  tar -C "$W" -czf "$OUT/sweeps-$dt.tar.gz" "full-$dt"
}

# ltx_time CONFIG LIMIT: scripts/benchmark_example.py at the LTX-Video target setting (as
# ltx_e2e, with ${LTX_E2E_ARGS:-}) for one configuration (compile, kernels or kernels+compile),
# in its own process, no profile: the times only, under LIMIT seconds, into
# $OUT/ltx-CONFIG[-$LTX_TAG].{log,json}; its time lines to $LOG.
ltx_time() {
  local cfg=$1 flags name=ltx-$1${LTX_TAG:+-$LTX_TAG}
  case $cfg in
    compile) flags="--compile --no-use-optimized-kernels" ;;
    kernels) flags="--use-optimized-kernels" ;;
    kernels+compile) flags="--compile --use-optimized-kernels" ;;
    *) echo "ltx_time: unknown configuration $cfg" >&2; return 2 ;;
  esac
  log "LTX 2B: $cfg: ${LTX_E2E_ARGS:-}"
  timeout "$2" python3 scripts/benchmark_example.py --num-frames 49 --height 512 --width 768 \
    --batch-size 1 --cfg --steps 10 --warmup-iterations 2 --no-progress ${LTX_E2E_ARGS:-} \
    $flags --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "ms/step|over the loop|GPU state|Error|error" "$OUT/$name.log" | tee -a "$LOG"
}

# gemm_probe LIMIT NAME LINES: tools/gemm_attention_probe.py --only l (LLaMA-8B's projections
# alone and fused, LTX 2B's linears) under LIMIT seconds into $OUT/NAME.json; the header and the
# table rows matching the extended regex LINES (after "| ") to $LOG.
gemm_probe() {
  log "probe: LLaMA-8B projections alone and fused ($2)"
  timeout "$1" python3 tools/gemm_attention_probe.py --only "l" --json "$OUT/$2.json" 2>&1 \
    | grep -E "^#|^\| ($3)" | tee -a "$LOG"
}

# llama_e2e LIMIT [NAME]: scripts/benchmark_transformers.py, LLaMA-8B prefill of 4096 tokens,
# the configurations ${LLAMA_CONFIGS:-eager,kernels,compile,kernels+compile} in
# ${LLAMA_ROUNDS:-3} alternating rounds of 5, under LIMIT seconds, into $OUT/NAME.{log,json}
# (NAME: llama); the rounds, medians and speedups to $LOG.
llama_e2e() {
  local name=${2:-llama} configs=${LLAMA_CONFIGS:-eager,kernels,compile,kernels+compile}
  local rounds=${LLAMA_ROUNDS:-3}
  log "LLaMA-8B prefill: ${LLAMA_CONFIGS:-every configuration}, $rounds rounds of 5"
  timeout "$1" python3 scripts/benchmark_transformers.py --seq-len 4096 --no-progress \
    --rounds "$rounds" --iterations 5 --no-reference --configs "$configs" \
    --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  echo "rc $?" | tee -a "$LOG"
  grep -E "round [0-9]+/|ms \(median|against|per round|^    (eager|compile|kernels)" \
    "$OUT/$name.log" | head -60 | tee -a "$LOG"
}

# llama_rounds LIMIT: llama_e2e of compile and kernels + compile alone in 15 rounds, into
# $OUT/llama-rounds.{log,json}. Kernels + compile has been 1.003-1.010x compile since run W,
# inside the spread of llama_e2e's 3 rounds: more rounds of the two alone say which way it leans.
llama_rounds() { LLAMA_CONFIGS=compile,kernels+compile LLAMA_ROUNDS=15 llama_e2e "$1" llama-rounds; }

# issue5_pair: LTX 2B at issue 5's setting, kernels + compile (130 s) and then, while the call
# has time, torch.compile (120 s), each in a process of its own (ltx_time): issue 5's closest
# comparison, for a card other than the H200. Exports LTX_E2E_ARGS.
issue5_pair() {
  export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS
  ltx_time kernels+compile 130
  fits 120 && ltx_time compile 120
}

# on_h200: whether the card lent is an H200 (issues 4 and 5 set their targets on it; a call for
# nvidia-h200 may get an H100).
on_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; }

# only_on_h200: on_h200, and otherwise the card and "nothing run" printed, for the scripts that
# only make sense on an H200 and stop before any setup (`only_on_h200 || exit 0`; this file
# needs nothing of tools/gpu_env.sh to be sourced).
only_on_h200() {
  on_h200 && return 0
  nvidia-smi --query-gpu=name --format=csv,noheader
  echo "not an H200: nothing run"
  return 1
}

# issue5_ltx LIMIT: LTX 2B at issue 5's setting, every configuration in one process (ltx_e2e
# under LIMIT seconds). Exports LTX_E2E_ARGS / LTX_E2E_KERNELS.
issue5_ltx() {
  export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS LTX_E2E_KERNELS=$LTX_ISSUE5_KERNELS
  ltx_e2e ltx-all "$1" --all-configs
}

# issue5_all: issue 5's run of every configuration: issue5_ltx under 290 s, then, while the
# call has time, LLaMA-8B prefill (llama_e2e) and compute-sanitizer memcheck of every op family.
issue5_all() {
  issue5_ltx 290
  fits 100 && llama_e2e 100
  fits 60 && SANITIZE_TOOLS=memcheck sanitize all "$(time_left)"
}

# experiment_end: what every device-call script ends with: log done, then every file under $OUT
# but $LOG packed into $OUT/NAME-files.tar.gz (and removed), because at most 8 files come back
# from $OUT (run V's call 2 left 10, and its summary and sweeps did not come back). A call cut
# by its limit never gets here; keep the files such a call leaves below 8.
experiment_end() {
  log done
  local name files
  name=$(basename "$LOG" .log)
  files=$(cd "$OUT" && find . -type f ! -name "$(basename "$LOG")" ! -name "$name-files.tar.gz" \
    | sed 's|^\./||' | sort)
  [[ -n $files ]] || return 0
  (cd "$OUT" && tar -czf "$name-files.tar.gz" $files && rm -f $files) || return 1
  echo "== packed into $name-files.tar.gz: $(echo $files)" >> "$LOG"
}

# ncu_full CASE...: Nsight Compute (full set, clocks not locked) of tools/ncu_ops.py's cases
# (op:shape) for the implementations in $NCU_IMPLS (ncu_ops.py's default when unset), into
# $OUT/ncu-details.txt (every section) and $OUT/ncu-summary.csv (time, DRAM, occupancy,
# registers, launch shape, instructions), the main lines of the details to $LOG; the report
# itself is removed (too large to bring back).
ncu_full() {
  timeout "${NCU_LIMIT:-200}" ncu --clock-control none --nvtx --nvtx-include "prof/" --set full \
    -o "$OUT/ncu" -f python3 tools/ncu_ops.py "$@" > "$OUT/ncu.log" 2>&1
  echo "ncu rc $?" | tee -a "$LOG"
  tail -3 "$OUT/ncu.log" | tee -a "$LOG"
  ncu --import "$OUT/ncu.ncu-rep" --page details > "$OUT/ncu-details.txt" 2>&1
  ncu --import "$OUT/ncu.ncu-rep" --page raw --csv --metrics \
    gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,\
launch__registers_per_thread,launch__grid_size,launch__block_size,smsp__inst_executed.sum \
    > "$OUT/ncu-summary.csv" 2>&1
  grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size|Executed Ipc A|Issue Slots Busy|Theoretical Occupancy|Stall|One or More Eligible" \
    "$OUT/ncu-details.txt" | head -120 | tee -a "$LOG"
  rm -f "$OUT/ncu.ncu-rep"
}

# NCU_STALL_METRICS: time, DRAM and L2 read/write traffic, L2 read hits, active warps,
# instructions, and the warp stall reasons per issued instruction (NCU_METRICS=$NCU_STALL_METRICS
# ncu_flush ...: runs HH and II's RMSNorm look).
NCU_STALL_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for _stall in long_scoreboard lg_throttle barrier short_scoreboard wait not_selected selected \
    mio_throttle math_pipe_throttle no_instruction dispatch_stall drain membar; do
  NCU_STALL_METRICS+=,smsp__average_warps_issue_stalled_${_stall}_per_issue_active.ratio
done
unset _stall

# ncu_flush NAME FLUSH IMPLS LIMIT CASE...: Nsight Compute of tools/ncu_ops.py's CASEs (op:shape)
# for IMPLS (comma-separated) with the sweep's L2 flush FLUSH (zero or read) before each profiled
# launch, so the kernel meets the L2 that flush leaves (--cache-control none) and no pass meets
# another pass's (--replay-mode application); the metrics in ${NCU_METRICS} (default: time, DRAM
# bytes and throughput, warps active, registers, launch shape), or with ${NCU_SECTIONS} (names
# separated by spaces, e.g. "WarpStateStats MemoryWorkloadAnalysis") those sections instead,
# under LIMIT seconds, into $OUT/ncu-NAME.csv (ncu's stderr in .err); one line a kernel to
# $LOG (tools/ncu_csv_rows.py). Each pass re-runs the application, so a section of several
# passes costs that many runs of ncu_ops.py. Knobs for our kernels go in the caller's
# environment (VAR=VALUE ncu_flush ...).
NCU_FLUSH_METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__block_size,launch__grid_size
ncu_flush() {
  local name=$1 flush=$2 impls=$3 limit=$4
  shift 4
  local what=(--metrics "${NCU_METRICS:-$NCU_FLUSH_METRICS}") s
  if [[ -n ${NCU_SECTIONS:-} ]]; then
    what=()
    for s in $NCU_SECTIONS; do what+=(--section "$s"); done
  fi
  NCU_FLUSH=$flush NCU_IMPLS=$impls timeout "$limit" ncu --clock-control none \
    --cache-control none --replay-mode application --nvtx --nvtx-include "prof/" \
    "${what[@]}" --csv python3 tools/ncu_ops.py "$@" \
    > "$OUT/ncu-$name.csv" 2> "$OUT/ncu-$name.err"
  echo "rc $?" | tee -a "$LOG"
  python3 tools/ncu_csv_rows.py "$OUT/ncu-$name.csv" | tee -a "$LOG"
}

# run_tests NAME LIMIT PYTEST_ARGS...: pytest (quiet, no cache, failures listed) under a
# timeout of LIMIT seconds (SIGINT, so that the summary still prints) into $OUT/NAME.log and
# $OUT/NAME.xml (JUnit); the failures and the summary line to $LOG.
run_tests() {
  local name=$1 limit=$2
  shift 2
  # the JUnit XML names every test that ran (-q does not): what a cut run reached
  timeout -s INT "$limit" python3 -m pytest -q -p no:cacheprovider -rf \
    --junitxml="$OUT/$name.xml" "$@" > "$OUT/$name.log" 2>&1 &
  local pid=$!
  wait "$pid"
  # timeout leads a process group of its own; what of it still runs when timeout is done (run JJ
  # call 3: test_stage_knobs.py's child sessions, which kept the GPU busy under the next step)
  # ends here
  pkill -KILL -g "$pid" 2>/dev/null
  grep -E "FAILED|ERROR|passed|failed|Interrupted" "$OUT/$name.log" | tail -30 | tee -a "$LOG"
}

# knob_tests NAME LIMIT [K]: tests/test_stage_knobs.py under LIMIT seconds into $OUT/NAME.{log,xml}, the
# settings matching the pytest -k expression K (all when empty), one after another (the file
# lock keeps them serial), each a child pytest of 16 workers.
knob_tests() {
  local sel=()
  [[ -n ${3:-} ]] && sel=(-k "$3")
  log "tests: knob settings '${3:-all}', $2 s"
  LTX_KNOB_TEST_WORKERS=16 run_tests "$1" "$2" --durations=20 "${sel[@]}" tests/test_stage_knobs.py
}

# sanitize NAME LIMIT FAMILY...: compute-sanitizer memcheck and racecheck (or the tools in
# ${SANITIZE_TOOLS}) of tools/sanitize_ops.py FAMILY... (in the caller's environment: knobs pick
# the paths), each under LIMIT seconds, into $OUT/sanitize-{memcheck,racecheck}-NAME.log; the
# summaries to $LOG.
sanitize() {
  local name=$1 limit=$2 tool
  shift 2
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    log "compute-sanitizer $tool ($name): $*"
    timeout "$limit" compute-sanitizer --tool $tool python3 tools/sanitize_ops.py "$@" \
      > "$OUT/sanitize-$tool-$name.log" 2>&1
    echo "rc $?" | tee -a "$LOG"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|sanitize_ops:|Error" "$OUT/sanitize-$tool-$name.log" \
      | tail -5 | tee -a "$LOG"
  done
}

# rms_two_pass_checks KNOB_LIMIT KNOB_SEL: change 99's checks of RMSNorm's two-pass path, each
# while the call has time: compute-sanitizer memcheck and racecheck of its rows (knobs on, any
# size and dtype), test_stage_knobs.py's settings matching KNOB_SEL under KNOB_LIMIT seconds,
# then ours beside every peer at D = 8192 in bf16 and fp16 (3 shuffled rounds), packed into
# $OUT/peers.tar.gz.
rms_two_pass_checks() {
  fits 80 && LTX_RMS_TWO_PASS=1 LTX_RMS_TWO_PASS_MIN_MB=0 LTX_RMS_TWO_PASS_MAX_VEC=4096 \
    sanitize two-pass 40 rms_norm_two_pass
  fits "$1" && knob_tests knobs-two-pass "$1" "$2"
  fits 130 && PEER_ARGS="--shapes 1x4096x8192,1x16384x8192 --rounds 3 --monitor" \
    peer_sweeps rms_norm "$W" 60 bf16 fp16
  tar -C "$W" -czf "$OUT/peers.tar.gz" . 2>/dev/null
}

# e2e_best PREBUILT LIMIT: LTX-Video 2B, tools/gpu_e2e.sh's part best (compile and kernels +
# compile at their fastest settings, the loop profiled) on prebuilt PREBUILT under LIMIT
# seconds, into $OUT/e2e.{log,json}; its main lines to $LOG.
e2e_best() {
  PREBUILT=$1 PARTS=best LTX_ARGS="--profile-loop 3" timeout "$2" \
    bash tools/gpu_e2e.sh > /dev/null 2>&1
  echo "gpu_e2e rc $?" | tee -a "$LOG"
  grep -E "^==|ms/step|over the loop|against|  (eager|compile|kernels)|timeline|per step of the loop|GPU state|host-bound|TOO LARGE|FAILED|Error" \
    "$OUT/e2e.log" | tee -a "$LOG"
}
