#!/usr/bin/env bash
# Queued for the next device session (not run yet): the one-wave weight preload of RMSNorm
# (tools/experiments/rms_norm_preload_one_wave.patch) timed against the tree over every
# rms_norm and fused_add_rms_norm shape of the full table (bf16, ours only), then the RMSNorm
# CUDA tests on the patched build. Log: $OUT/ab.log. About 6 minutes (two builds of sm_90).
set -uo pipefail
cd "$(dirname "$0")/../.."
AB_PATCH=tools/experiments/rms_norm_preload_one_wave.patch AB_OPS=rms_norm,fused_add_rms_norm \
  AB_SWEEP_ARGS="--dtypes bf16" AB_TESTS=tests/test_rms_norm.py timeout 560 bash tools/gpu_ab.sh
