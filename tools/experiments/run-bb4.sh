#!/usr/bin/env bash
# Run BB, device call 4, on B1 (HEAD's kernels by default; carry [".whl-h", ".prebuilt"],
# WHEELS=.whl-h). Call 3: Liger's RMSNorm takes 15.7-15.9 us at 2x2688x2048 in a process that
# also runs torch.compile's kernel, 17.4-17.7 in every process without it (ours 17.2-17.3 in
# all). Inductor sets TRITON_PTXAS_PATH to torch's own ptxas before it compiles
# (torch/_inductor/runtime/compile_tasks.py), so Triton kernels compiled after it (Liger's)
# are assembled by another ptxas than Triton's own. Is that it? Liger alone with Triton's
# ptxas, alone with torch's (TRITON_PTXAS_PATH set by hand), and beside torch.compile, each
# process with its own Triton cache; the cubins come back for reading their SASS.
# Files: $OUT/bb4.log, $OUT/bb4-files.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu_env.sh
source tools/gpu_prebuilt.sh
experiment_start bb4
use_prebuilt B1 | tee -a "$LOG"
TORCH_PTXAS=$(python3 -c "import torch, pathlib; print(pathlib.Path(torch.__file__).parent / 'bin' / 'ptxas')")
log "Triton's ptxas: $(python3 -c 'from triton import knobs; print(knobs.nvidia.ptxas.path, knobs.nvidia.ptxas.version)' 2>&1 | tail -1)"
log "torch's ptxas: $TORCH_PTXAS: $($TORCH_PTXAS --version 2>&1 | tail -1)"
run_set() {  # NAME IMPLS [VAR=VALUE...]
  local name=$1 impls=$2
  shift 2
  fits 40 || return 0
  log "$name: $impls $*"
  env TRITON_CACHE_DIR="$W/cache-$name" "$@" timeout 60 python3 benchmarks/sweep.py --ops rms_norm \
    --shapes 2x2688x2048,1x4096x4096 --dtypes bf16 --rounds 2 --impls "$impls" \
    --out "$W/$name" 2>&1 | tail -1
  awk -F, -v s="$name" '$1 == "rms_norm" { print s ": " $2 " " $4 " " $5 }' "$W/$name/sweep.csv" \
    | tee -a "$LOG"
  mkdir -p "$W/cubins/$name"
  find "$W/cache-$name" -name "*rms_norm_forward*.cubin" -exec cp {} "$W/cubins/$name/" \;
  ls "$W/cubins/$name" | tee -a "$LOG"
}
run_set triton-ptxas ltx,liger
run_set torch-ptxas ltx,liger TRITON_PTXAS_PATH="$TORCH_PTXAS"
run_set with-compile ltx,compile,liger
run_set triton-ptxas-2 ltx,liger
run_set torch-ptxas-2 ltx,liger TRITON_PTXAS_PATH="$TORCH_PTXAS"
tar -C "$W" -czf "$OUT/cubins.tar.gz" cubins
experiment_end
