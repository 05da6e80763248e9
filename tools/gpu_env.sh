# Sourced by tools/gpu_run.sh and tools/gpu_e2e.sh on a GPU machine, from the repository root:
# the output folder $OUT (default ./out), unbuffered Python output for the logs, the Python
# packages the machine lacks, carried as wheels in .whl/ (bash ../shared/device/fetch_wheels.sh),
# installed to /tmp/site; and the one CUDA capability to build for there (sm_90), for speed.
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# WHEELS: the folder of wheels to install (default .whl; a call that needs fewer packages can
# carry a smaller folder, e.g. .whl-min, to leave room in the carry for prebuilt extensions).
# SITE_TAR, instead: the packages installed on the development machine and packed
# (tools/device_wheels.sh --packed), unpacked to /tmp/site; WHEELS is not looked at then.
WHEELS=${WHEELS:-.whl}
# Once per machine for a set of packages (several scripts in one call source this file).
if [[ -n ${SITE_TAR:-} ]]; then
  stamp=/tmp/site/.ltx-site-$(md5sum < "$SITE_TAR" | cut -c1-12)
  if [[ ! -f $stamp ]]; then
    mkdir -p /tmp/site && tar -C /tmp/site -xJf "$SITE_TAR" || exit 1
    touch "$stamp"
  fi
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
elif ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  stamp=/tmp/site/.ltx-wheels-$(ls "$WHEELS"/*.whl | md5sum | cut -c1-12)
  if [[ ! -f $stamp ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$WHEELS"/*.whl || exit 1
    touch "$stamp"
  fi
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
# The transformers this project pins (requirements.txt), or a warning: the machine's own runs
# LLaMA without this package's rope under kernelize (PERFORMANCE.md, change 90);
# tools/device_wheels.sh puts the pinned one in .whl-h.
pinned_tf=$(sed -n 's/^transformers==\([^ #]*\).*/\1/p' requirements.txt)
have_tf=$(python3 -c "import transformers; print(transformers.__version__)" 2>/dev/null)
if [[ -n $pinned_tf && $have_tf != "$pinned_tf" ]]; then
  echo "gpu_env: warning: transformers ${have_tf:-missing}, not the pinned $pinned_tf" \
    "(carry tools/device_wheels.sh's .whl-h, WHEELS=.whl-h)" >&2
fi
export LTX_CUDA_CAPABILITIES=${LTX_CUDA_CAPABILITIES:-9.0}
