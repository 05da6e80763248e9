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
# ${AB_DTYPES:-bf16,fp16}, the comma-separated OPS) from prebuilt A, B, A, B on one lease, into DIR/{A1,B1,A2,B2}; then
# tools/ab_table.py of both sides (two runs each) into DIR/ab.md and on stdout.
# ${AB_SWEEP_LIMIT:-60} seconds a sweep.
prebuilt_ab() {
  local a=$1 b=$2 ops=$3 dir=$4 run side
  for run in 1 2; do
    for side in "$a" "$b"; do
      use_prebuilt "$side" > /dev/null || return 1
      echo "== $side run $run: ours, $ops ($(date +%T))"
      timeout "${AB_SWEEP_LIMIT:-60}" python3 benchmarks/sweep.py --impls ltx --dtypes "${AB_DTYPES:-bf16,fp16}" \
        --ops "$ops" --out "$dir/$side$run" 2>&1 | tail -1
    done
  done
  python3 tools/ab_table.py "$dir/${a}1/sweep.csv" "$dir/${a}2/sweep.csv" -- \
    "$dir/${b}1/sweep.csv" "$dir/${b}2/sweep.csv" | tee "$dir/ab.md"
}

# prebuilt_faster AB_MD OP SHAPE DTYPE A B: A or B, whichever is faster at that case of
# prebuilt_ab's table (B when B / A < 1; nothing when the case is missing).
prebuilt_faster() {
  awk -F'|' -v op="$2" -v shape="$3" -v dt="$4" -v a="$5" -v b="$6" '
    { gsub(/ /, "", $2); gsub(/ /, "", $3); gsub(/ /, "", $4) }
    $2 == op && $3 == shape && $4 == dt { print ($7 + 0 < 1.0) ? b : a }' "$1"
}
