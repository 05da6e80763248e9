#!/usr/bin/env bash
# Run EE, device call 2, on E0 (as call 1; carry [".whl", ".prebuilt"]: fetch_wheels.sh's
# wheels, no transformers, so the H200's own ran; RMS_ENV: knob settings, comma-separated, for
# every step when call 1's A/B changed a default, e.g. LTX_RMS_PACKED_MIN_VEC=0). In order, each later step only while the call has time for it:
#   0. test_rms_norm_packed_rows (now test_rms_norm_register_rows) under RMS_ENV (as run, with
#      the packed path off: the register path's grids of several waves);
#   1. issue 5, one run: LTX 2B at its setting (49 frames 768x512, batch 1 x2 CFG, bf16), every
#      configuration in one process (eager, compile, kernels, kernels + compile), each call
#      one CUDA graph replay, --freeze, --gelu-in-matmul, cuBLASLt's workspace at 0 (run AA),
#      profiled (one step and 3 of the loop: what is left outside GEMMs and attention);
#   2. LLaMA-8B prefill (4096 tokens), every configuration, 3 alternating rounds;
#   3. issue 4's table rows of RMSNorm (rms_norm, fused_add_rms_norm: every shape and peer,
#      3 shuffled rounds) in bf16 and fp16, for the packed path's rows beside the peers.
# Files: $OUT/ee2.log, $OUT/ee2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ee2
use_prebuilt E0 | tee -a "$LOG"
if [[ -n ${RMS_ENV:-} ]]; then
  export ${RMS_ENV//,/ }
  log "knobs for every step: $RMS_ENV"
fi
log "tests: test_rms_norm_packed_rows (CUDA) under these knobs"
run_tests tests-rows 60 -n 16 -k "cuda and packed_rows" tests/test_rms_norm.py
export LTX_E2E_ARGS="--cuda-graph --freeze --gelu-in-matmul"
export LTX_E2E_KERNELS=$LTX_ISSUE5_KERNELS
ltx_e2e ltx-ws0-all 280 --all-configs --cublaslt-workspace-kib 0
fits 100 && llama_e2e 100
if fits 200; then
  PEER_ARGS="--rounds 3 --order shuffle" peer_sweeps rms_norm,fused_add_rms_norm "$W" 100 bf16 fp16
  tar -C "$W" -czf "$OUT/peers.tar.gz" $(cd "$W" && ls -d peers-*)
fi
experiment_end
