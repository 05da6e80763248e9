#!/usr/bin/env bash
# Queued for the next device session (not run yet): small_grid_one_vec.patch, one device call.
# On the development machine first (torch 2.11+cu130 Python, the patch applied):
#   git apply tools/experiments/small_grid_one_vec.patch
#   LTX_CUDA_CAPABILITIES=9.0 python tools/build.py --backends cuda --no-ptx
#   tar -C build -cJf .prebuilt/small_grid.tar.xz torch211-cxx11-cu130-x86_64-linux
#   git apply -R tools/experiments/small_grid_one_vec.patch
# then this script on the GPU machine (carry [".whl", ".prebuilt"]): our row kernels timed
# with LTX_SMALL_GRID_VEC 0 (today's configuration), 1 and 2 on that one build (the knob is
# read once per process; each setting is its own sweep), every full-table shape, bf16; then
# the rms_norm and adaln CUDA tests with the default (1). Sweeps: $OUT/tune-*; log: e2e.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
PREBUILT=small_grid PARTS="tune tests" TUNE_VAR=LTX_SMALL_GRID_VEC TUNE="0:256 1:256 2:256" \
  TUNE_ARGS="--dtypes bf16 --ops rms_norm,fused_add_rms_norm,adaln,gated_residual_adaln" \
  TESTS="-n 12 -k cuda tests/test_rms_norm.py tests/test_adaln.py" timeout 570 bash tools/gpu_e2e.sh
