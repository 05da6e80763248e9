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
