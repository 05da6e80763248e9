#!/usr/bin/env bash
# Run TT, device call 2 (2026-12-07, sixth session of the day), on any card: what run TT's call
# 1 (run-ss1.sh on SS0, an H100) did not reach in its budget. Its two-pass knob step ran
# rms-two-pass-256 (passed, 110 s) and was cut off in rms-two-pass-512, so the peers at D = 8192
# never ran. Here: rms_two_pass_checks with that setting alone (the sanitizers again, 15 s),
# then ours beside every peer at D = 8192 in bf16 and fp16. Carry `.site/site-h.tar.xz`,
# `.prebuilt/SS0.tar.xz` (SS0 = 21b4dfd's source). Files: $OUT/tt2.log, $OUT/tt2-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start tt2
use_prebuilt SS0 | tee -a "$LOG"
rms_two_pass_checks 170 "rms-two-pass-512"
experiment_end
