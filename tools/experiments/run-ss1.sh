#!/usr/bin/env bash
# Run SS, device call 1 (2026-12-07, fifth session of the day), on any card: SS0 = the current
# source, where run RR's review findings are mended (launch_rms_norm_two_pass reads its knobs
# through dense_knobs / dense_wanted, whose MAX_VEC may now rise to a cap; the dense and
# two-pass kernels share rms_norm_store_vec for their write). Behaviour at the defaults is
# meant to be RR2's; the SASS of the default instances differs only in a few integer
# instructions. Steps: test_rms_norm.py's CUDA tests at the defaults; the dense-rows tests of
# adaln and rms_norm_rope (dense_knobs changed under them); both two-pass knob settings of
# test_stage_knobs.py; compute-sanitizer memcheck and racecheck of the two-pass rows (knobs on,
# any size) -- none of these knob runs has run before; then ours beside every peer at D = 8192
# in bf16 and fp16, 3 shuffled rounds. Carry `.site/site-h.tar.xz`, `.prebuilt/SS0.tar.xz`.
# Files: $OUT/ss1.log, $OUT/ss1-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ss1
use_prebuilt SS0 | tee -a "$LOG"

log "tests: test_rms_norm.py, CUDA, defaults"
run_tests rms-cuda 150 -n 16 -k "cuda and not huge" tests/test_rms_norm.py
log "tests: adaln / rms_norm_rope dense rows, CUDA, defaults"
run_tests dense-cuda 60 -n 16 -k "cuda and dense_rows_many" tests/test_adaln.py tests/test_rope.py
rms_two_pass_checks 200 "rms-two-pass"
experiment_end
