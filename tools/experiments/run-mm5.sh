#!/usr/bin/env bash
# Run MM, a last try with the ~330 s of device time left after five starts that found no
# machine: compute-sanitizer memcheck and racecheck of every op family on MM0 (run-mm4.sh's
# step 1 alone). Carry as run-mm1.sh. Files: $OUT/mm5.log, $OUT/mm5-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start mm5
use_prebuilt MM0 | tee -a "$LOG"
sanitize all 60
experiment_end
