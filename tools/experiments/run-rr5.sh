#!/usr/bin/env bash
# Run RR, device call 5: the command run on the H200 that run-rr4.sh left warm (RR2 in place
# in build/, the packages in /tmp/site), with the session's last ~110 s: ours (RR2: change 99's
# two-pass path on by default) and torch.compile at RMSNorm's D = 8192 rows, bf16, one sweep
# with the path on and one with it off (LTX_RMS_TWO_PASS=0). Files: $OUT/h200-{on,off}/.
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
for s in on off; do
  if [ $s = off ]; then export LTX_RMS_TWO_PASS=0; fi
  timeout 45 python3 benchmarks/sweep.py --impls ltx,compile --dtypes bf16 --ops rms_norm \
    --shapes 1x4096x8192,1x16384x8192 --out "$OUT/h200-$s" 2>&1 | tail -1
  grep -E "^\| rms_norm" "$OUT/h200-$s/sweep.md"
done
