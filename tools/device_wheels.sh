#!/usr/bin/env bash
# The wheels a device call carries (.whl-h, ignored by git): what the GPU machine lacks for this
# project's tests and benchmarks, taken from ../shared/device/fetch_wheels.sh's .whl (kernels,
# diffusers, Liger-Kernel and what they import) without the sigstore chain that only the
# `kernels` CLI needs, plus transformers at the version requirements.txt pins. The machine's
# image has a transformers of its own, on which kernelize does not map `rotary_pos_emb` into
# LLaMA's attention: run EE's kernels configuration ran torch's rotate_half there, 8% slower,
# without an error (PERFORMANCE.md, change 90). ~22 MB: room for one prebuilt extension in the
# 64 MiB a call carries. Use: carry [".whl-h", ...] and WHEELS=.whl-h (tools/gpu_env.sh).
# --small: .whl-s instead, ~3 MB, without diffusers and transformers (the kernel benchmarks,
# the op tests and the sanitizers, not the models): for a call whose tree and prebuilt leave no
# room for .whl-h (run FF's call 4).
set -euo pipefail
cd "$(dirname "$0")/.."
ls .whl/kernels-*.whl > /dev/null 2>&1 || bash ../shared/device/fetch_wheels.sh
if [[ ${1:-} == --small ]]; then
  rm -rf .whl-s && mkdir -p .whl-s
  for pkg in importlib_metadata kernels liger_kernel tomlkit platformdirs; do
    cp .whl/"$pkg"-*.whl .whl-s/
  done
  du -sh .whl-s
  exit 0
fi
rm -rf .whl-h && mkdir -p .whl-h
for pkg in diffusers importlib_metadata kernels liger_kernel tomlkit platformdirs; do
  cp .whl/"$pkg"-*.whl .whl-h/
done
version=$(sed -n 's/^transformers==\([^ #]*\).*/\1/p' requirements.txt)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 -d .whl-h \
  "transformers==$version" 2>&1 | grep -v "is ignored" || true
ls .whl-h/transformers-"$version"-*.whl > /dev/null
du -sh .whl-h
# --packed: also .site/site-h.tar.xz, the same packages installed and packed with xz (~8 MB
# against the wheels' 22: zip compresses each file alone), for a call whose tree and prebuilt
# leave no room for the wheels (run LL: 32 + 22 + 14 MiB is over the 64 a call carries). Carry
# [".site/site-h.tar.xz"] with SITE_TAR=.site/site-h.tar.xz (tools/gpu_env.sh unpacks it).
if [[ ${1:-} == --packed ]]; then
  rm -rf .site/tmp && mkdir -p .site/tmp
  python3 -m pip install -q --no-index --no-deps --no-compile --target .site/tmp .whl-h/*.whl
  tar -C .site/tmp -cJf .site/site-h.tar.xz . && rm -rf .site/tmp
  du -sh .site/site-h.tar.xz
fi
