"""The row kernels' staged and dense paths under the knobs that change which code runs
(common/launch.cuh: StageKnobs, stage_config; adaln.cu: LTX_GATED_STAGE_Y; common/dense.cuh:
DenseKnobs, for adaln.cu, rms_norm.cu and rms_norm_rope.cu), the activations' row and flat
kernels (activation.cu: LTX_ACT_FLAT), and rope's flat path (rope.cu: LTX_ROPE_FLAT,
LTX_ROPE_FLAT_ORDER).

The knobs are read once per process, so each setting runs CUDA tests of rms_norm, adaln,
rms_norm_rope or the activations again in a child pytest with that environment: the defaults
send only some shapes down the staged path (grids beyond one wave, rows of at most 384 or 512
vectors, groups of at most 32 to 128 threads), the AdaLN kernels' dense path takes contiguous
rows of up to 512 vectors first (on sm_90; plain adaln with shared modulation only up to 32 MB
of x), RMSNorm's dense path rows at one stride of up to 1024 vectors (rms_norm up to 44 MiB of
x in rows of up to 512 vectors, 8 MiB beyond), the norm + rope kernels' dense path interleaved rows of up to 512 (both on sm_90; its weights
loaded after the reduction for pair tables and one tensor, LTX_NORM_ROPE_DENSE_LATE), the
activations' flat kernel dense rows of 16-byte vectors (any device), and these settings send
every shape of those tests down the paths the defaults leave out. CUDA only: on the CPU there
is nothing the knobs change.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import HAS_CUDA, ROOT

OPS = ("LTX_STAGE", "LTX_ADALN_STAGE", "LTX_GATED_STAGE")
# The staged settings turn the dense paths off: they run before the staged one where they
# apply (dense rows on sm_90).
NO_DENSE = {"LTX_ADALN_DENSE": "0", "LTX_GATED_DENSE": "0", "LTX_RMS_DENSE": "0"}


def every_op(mode="1", max_vec="1000000", max_group=None) -> dict[str, str]:
    """Every op's staged path in `mode` (1: every grid), for rows up to `max_vec` vectors, in
    groups of up to `max_group` threads (None: the op's default)."""
    env = dict(NO_DENSE)
    for op in OPS:
        env[op] = mode
        env[op + "_MAX_VEC"] = max_vec
        if max_group is not None:
            env[op + "_MAX_GROUP"] = max_group
    return env


SETTINGS = {
    # Every shape staged, one warp (or less) a row, y staged with x.
    "one-warp": every_op(max_group="32"),
    # Several warps a row: groups of up to 256 threads at one vector a thread, combined through
    # shared memory (block barriers inside the reductions).
    "several-warps": dict(every_op(max_group="256"), LTX_STAGE_VEC="1"),
    # The staged gated kernel at its own defaults (2 warps a row, y staged), at every grid (on
    # sm_90 the dense path runs first where it applies: off here).
    "gated-defaults": {"LTX_GATED_STAGE": "1", "LTX_GATED_STAGE_MAX_VEC": "1000000", **NO_DENSE},
    # The gated kernel with y read from global memory into the sum.
    "gated-y-read": dict(every_op(), LTX_GATED_STAGE_Y="0"),
    # The AdaLN kernels' dense path at every grid it applies to (dense rows of at most 512
    # vectors, on any device, at any size of x), in blocks of 512 threads (several rows a block below 512
    # vectors) and of one row (32 threads asked for: one row of 32 or more, or 32 threads of
    # shorter rows).
    "dense-every-grid": {"LTX_ADALN_DENSE": "1", "LTX_GATED_DENSE": "1",
                         "LTX_ADALN_DENSE_MAX_MB": "0"},
    "dense-row-blocks": {"LTX_ADALN_DENSE": "1", "LTX_GATED_DENSE": "1", "LTX_RMS_DENSE": "1",
                         "LTX_ADALN_DENSE_MAX_MB": "0", "LTX_DENSE_BLOCK_THREADS": "32"},
    # RMSNorm's dense path on any device with two vectors a thread at every D (the defaults take
    # one in fused_add_rms_norm and in rms_norm's rows beyond 512 vectors).
    "rms-dense-two-vectors": {"LTX_RMS_DENSE": "1", "LTX_RMS_DENSE_VPT": "2"},
    # RMSNorm's dense path on any device in 512-thread blocks of one vector a thread at every D
    # (run R's layout, which the defaults leave to fused_add_rms_norm and to rms_norm's rows
    # beyond 512 vectors).
    "rms-dense-wide-blocks": {"LTX_RMS_DENSE": "1", "LTX_RMS_DENSE_VPT": "1",
                              "LTX_RMS_DENSE_THREADS": "512"},
    # RMSNorm's two-pass path (rms_norm.cu) at every row it can take, on any device and dtype and
    # at any size of x (the defaults: 16-bit rows of 1024 vectors from 64 MiB of x, on sm_90):
    # 256-thread blocks (D = 2048, 4096 and 8192 in 16 bits, 2048 in fp32: one, two and four
    # vectors a thread) and 512-thread blocks (D = 8192 and 16384 in 16 bits, 2048-8192 in
    # fp32); the other rows go the defaults' way. The 256-thread setting also takes inductor's
    # cache priorities (LTX_RMS_TWO_PASS_HINTS: the rows of two vectors a thread, there D = 4096
    # in 16 bits and 2048 in fp32), the 512-thread one the defaults' plain loads.
    "rms-two-pass-256": {"LTX_RMS_TWO_PASS": "1", "LTX_RMS_TWO_PASS_MIN_VEC": "1",
                         "LTX_RMS_TWO_PASS_MAX_VEC": "100000", "LTX_RMS_TWO_PASS_MIN_MB": "0",
                         "LTX_RMS_TWO_PASS_THREADS": "256", "LTX_RMS_TWO_PASS_HINTS": "1"},
    "rms-two-pass-512": {"LTX_RMS_TWO_PASS": "1", "LTX_RMS_TWO_PASS_MIN_VEC": "1",
                         "LTX_RMS_TWO_PASS_MAX_VEC": "100000", "LTX_RMS_TWO_PASS_MIN_MB": "0"},
    # Every dense path off: on sm_90 the paths sm_75 / sm_80 take (register, staged and the
    # generic norm + rope kernel), for the RMSNorm and norm + rope tests.
    "dense-off": dict(NO_DENSE, LTX_NORM_ROPE_DENSE="0"),
    # The norm + rope kernels' dense path with the weights loaded with the row, before the
    # reduction, for every operand kind, and after it for every kind (rms_norm_rope.cu, LATE:
    # the defaults load them late for pair tables and one tensor, early for the q / k pair with
    # full-width tables).
    "norm-rope-dense-early": {"LTX_NORM_ROPE_DENSE": "1", "LTX_NORM_ROPE_DENSE_LATE": "0"},
    "norm-rope-dense-late": {"LTX_NORM_ROPE_DENSE": "1", "LTX_NORM_ROPE_DENSE_LATE": "1"},
    # rope.cu: the flat path off (on the vector path, the heads path where cos / sin broadcast
    # over one head dim and the rows path elsewhere: what the defaults leave to 2^31 items or
    # more); the
    # flat path in x's index order (the defaults walk transposed q / k in memory order) and
    # with 64-bit row offsets (the defaults take 32-bit ones where they fit).
    "rope-flat-off": {"LTX_ROPE_FLAT": "0"},
    "rope-flat-index-order": {"LTX_ROPE_FLAT_ORDER": "0"},
    "rope-flat-rows64": {"LTX_ROPE_FLAT_ROWS32": "0"},
    # The activations (activation.cu): the row kernel for every layout (on every device the
    # defaults send dense rows of 16-byte vectors to the flat kernel), and the flat kernel for
    # the gated ops only (gelu_tanh and silu on the row kernel, run S call 2's default).
    "act-row-kernel": {"LTX_ACT_FLAT": "0"},
    # gated_residual's flat kernel with the general (FastBcast) gate offset for every gate (the
    # defaults take the one-division RunBcast where the gate has that form).
    "gated-residual-fast-bcast": {"LTX_GATED_RESIDUAL_RUN_GATE": "0"},
    "act-flat-gated": {"LTX_ACT_FLAT": "1"},
}
# The child's selection: the reference tests of both files (every dtype, operand kind and row
# count; not the misaligned layouts, whose scalar accesses are never staged), or for the
# gated settings every gated test and the row / LTX-shape tests. Run K on the H200 (14
# workers): several-warps 1056 passed in 61 s, gated-defaults 440 passed in 41 s.
_REF = "cuda and not misaligned and reference"
_GATED = "cuda and not misaligned and (gated or rows_per_block or ltx)"
# For the dense settings the layouts it takes (contiguous rows; the views of the LTX and
# operand tests), not the long rows it never takes nor the many-row test that runs it at the
# defaults; in one-row blocks the reference tests. Run Q (H200, 14 workers): the whole CUDA
# selection of test_adaln.py took over 150 s a setting.
_DENSE = "cuda and not misaligned and not strided and not dense_rows_many and not long_rows"
# RMSNorm's dense settings: every row but the misaligned views (scalar paths), the long rows
# beyond the dense path's cap and the huge tensors.
_RMS_DENSE = "cuda and not misaligned and not long_rows and not huge"
# rope and rope_qk (not the norm + rope ops, which rope.cu does not run): 493 tests, 95 s on
# the H200 (run V); the layouts of more than one leading dim: transposed, broadcast and strided
# views, the models' layouts.
_ROPE = "cuda and not rms_norm and not huge"
_ROPE_VIEWS = _ROPE + " and (gqa or heads or layout or broadcast or strided or llama)"
SELECT = {"one-warp": _REF, "several-warps": _REF, "gated-defaults": _GATED,
          "gated-y-read": _GATED, "dense-every-grid": _DENSE,
          "dense-row-blocks": "cuda and contiguous and reference",
          "rms-dense-two-vectors": _RMS_DENSE,
          "rms-dense-wide-blocks": _RMS_DENSE,
          "dense-off": "cuda and not misaligned and (rms_norm or norm_rope) and not huge",
          "rms-two-pass-256": "cuda and not misaligned and not huge",
          "rms-two-pass-512": "cuda and not misaligned and not huge",
          "norm-rope-dense-early": "cuda and not misaligned and rms_norm_rope and not huge",
          "norm-rope-dense-late": "cuda and not misaligned and rms_norm_rope and not huge",
          "act-row-kernel": "cuda", "act-flat-gated": "cuda",
          "gated-residual-fast-bcast": "cuda and gated_residual and not gated_residual_adaln",
          "rope-flat-off": _ROPE, "rope-flat-index-order": _ROPE_VIEWS,
          "rope-flat-rows64": _ROPE_VIEWS}
# The test files of each setting.
FILES = {name: ["tests/test_rms_norm.py", "tests/test_adaln.py"] for name in SETTINGS}
FILES["dense-every-grid"] = ["tests/test_adaln.py"]
FILES["rms-dense-two-vectors"] = FILES["rms-dense-wide-blocks"] = ["tests/test_rms_norm.py"]
FILES["rms-two-pass-256"] = FILES["rms-two-pass-512"] = ["tests/test_rms_norm.py"]
FILES["dense-off"] = ["tests/test_rms_norm.py", "tests/test_rope.py"]
FILES["norm-rope-dense-early"] = FILES["norm-rope-dense-late"] = ["tests/test_rope.py"]
FILES["act-row-kernel"] = FILES["act-flat-gated"] = ["tests/test_activation.py"]
FILES["gated-residual-fast-bcast"] = ["tests/test_adaln.py"]
for _name in ("rope-flat-off", "rope-flat-index-order", "rope-flat-rows64"):
    FILES[_name] = ["tests/test_rope.py"]


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_staged_paths_under_knobs(setting):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LTX_")}
    env.update(SETTINGS[setting])
    n = os.environ.get("LTX_KNOB_TEST_WORKERS", str(min(14, os.cpu_count() or 1)))
    workers = ["-n", n]
    try:
        import xdist  # noqa: F401
    except ImportError:
        workers = []
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *workers,
           "-k", SELECT[setting], *FILES[setting]]
    # One setting at a time on this machine: each child takes a pool of workers sized to the
    # machine, and under an outer `pytest -n 16` the 17 settings ran at once (run JJ call 3,
    # H200: ~250 CUDA processes, CUDA out of memory in the tests beside them).
    with open(Path(tempfile.gettempdir()) / "ltx-knob-tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    lines = (r.stdout + r.stderr).splitlines()
    # why the child failed (its error lines; the tail alone can be all warnings), then its tail
    why = [ln for ln in lines if re.match(r"^E\s+\S*(Error|Exception)\b", ln)][:20]
    tail = "\n".join(why + ["..."] + lines[-40:])
    assert r.returncode == 0, f"{setting} ({SETTINGS[setting]}):\n{tail}"
    assert " passed" in tail and "no tests ran" not in tail, tail
