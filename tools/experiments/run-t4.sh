#!/usr/bin/env bash
# Run T, device call 4 (the session's last ~200 s of device time), on E (its LTX kernels are
# the final source's): LTX-Video 2B eager and kernels in one process, again, because call 3's
# kernels row timed one by one was jittery (median 55.05 ms, min 40.97, mean 51.19; 42.35 over
# the loop). (carry [".whl-t", ".prebuilt"], WHEELS=.whl-t)
# Files: $OUT/e2e.{log,json}.
set -uo pipefail
cd "$(dirname "$0")/../.."
PREBUILT=E PARTS=compare timeout "${T4_LIMIT:-100}" bash tools/gpu_e2e.sh > /dev/null 2>&1
echo "gpu_e2e rc $?" >> "$OUT/e2e.log"
