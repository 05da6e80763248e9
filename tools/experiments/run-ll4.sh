#!/usr/bin/env bash
# Run LL, device call 4 (as run, one command line on the warm machine; carry as call 1):
# LTX 2B at issue 5's setting, kernels + compile and then torch.compile, each in its own
# process, no profile, with call 1's arguments. (A first try exported SITE_TAR after sourcing
# gpu_env.sh, so diffusers was missing and both runs failed at import; this is the second. As
# run it also set WHEELS=/nonexistent, which gpu_env.sh no longer needs: SITE_TAR replaces the
# wheels there.)
# Files: $OUT/ll4.log, $OUT/ll4-files.tar.gz.
export SITE_TAR=.site/site-h.tar.xz
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start ll4 > /dev/null
use_prebuilt LL0 | tee -a "$LOG"
export LTX_E2E_ARGS=$LTX_ISSUE5_ARGS
ltx_time kernels+compile 130
fits 120 && ltx_time compile 120
experiment_end
