"""The local build is laid out as kernel-builder lays it out and loads the ways users load it:
get_kernel + LOCAL_KERNELS (conftest), get_local_kernel(Path("build")), metadata.json read by
kernels' own parser, a per-build op namespace, and the compatibility folder for older kernels."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT, load_kernel


@pytest.mark.kernels_ci
def test_get_local_kernel_loads_the_build():
    from kernels import get_local_kernel

    k = get_local_kernel(ROOT / "build")
    for name in ("rms_norm", "adaln", "gelu_tanh", "rope", "rms_norm_rope", "layers"):
        assert name in k.__all__ and hasattr(k, name)
    backend = "cuda" if torch.version.cuda else "cpu"
    assert re.fullmatch(rf"_ltx_kernels_{backend}_[0-9a-z]{{7,10}}(_dirty)?", k.__name__)


@pytest.mark.kernels_ci
def test_metadata_and_namespace(backend):
    from kernels._rust import Metadata

    k = load_kernel(backend)
    variant = Path(k.__file__).parent
    meta = Metadata.read_from_file(variant / "metadata.json")
    raw = json.loads((variant / "metadata.json").read_text())
    assert meta.name.python_name == "ltx_kernels" and meta.version == 1
    assert raw["license"] == "Apache-2.0" and raw["python-depends"] == []
    assert raw["backend"]["type"] == backend
    if backend == "cuda":
        assert raw["backend"]["archs"], "CUDA builds declare their archs"
    # The module is imported under the metadata id, which is also the op namespace.
    assert k.__name__ == meta.id
    assert re.fullmatch(rf"_ltx_kernels_{backend}_[0-9a-z]{{7,10}}(_dirty)?", meta.id)
    assert (variant / f"{meta.id}.abi3.so").exists()
    assert not (ROOT / "torch-ext" / "ltx_kernels" / "_ops.py").exists(), "_ops.py is generated"


@pytest.mark.kernels_ci
def test_ops_ask_for_stride_order_only(backend):
    """Every op is registered with `needs_fixed_stride_order` (torch_binding.cpp), so that
    inductor passes views whose layout it changed (split projections under freezing) instead
    of copying them to the traced strides (tests/test_integrations.py shows the copy gone)."""
    ops = load_kernel(backend)._ops.ops
    names = re.findall(r'"(\w+)\(Tensor', (ROOT / "torch-ext" / "torch_binding.cpp").read_text())
    assert len(names) == 14, names
    for name in names:
        assert getattr(ops, name).default.tags == [torch.Tag.needs_fixed_stride_order], name


def test_compat_package_imports(backend):
    """build/<variant>/ltx_kernels/ is what older kernels releases import; it must load and
    expose the same API (in a fresh process: a library registers its ops once per process)."""
    variant = Path(load_kernel(backend).__file__).parent
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import ltx_kernels as k; "
            "x = torch.randn(3, 64, device=sys.argv[2]); print(float((k.rms_norm(x) - x * torch.rsqrt("
            "x.pow(2).mean(-1, keepdim=True) + 1e-6)).abs().max()))")
    r = subprocess.run([sys.executable, "-c", code, str(variant), backend], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert float(r.stdout.strip().splitlines()[-1]) < 1e-5


def test_gencode_flags_ptx_only_for_the_last_capability_unless_off():
    sys.path.insert(0, str(ROOT / "tools"))
    import build as builder

    assert builder.gencode_flags(["8.0", "9.0"]) == [
        "-gencode=arch=compute_80,code=[sm_80]", "-gencode=arch=compute_90,code=[sm_90,compute_90]"]
    assert builder.gencode_flags(["8.0", "9.0"], ptx=False) == [
        "-gencode=arch=compute_80,code=[sm_80]", "-gencode=arch=compute_90,code=[sm_90]"]


def test_defines_reach_every_compile_command(tmp_path):
    """`tools/build.py -D NAME=VALUE` (experiment builds, e.g. LTX_LOAD_ONCE) reaches every
    source's command, CUDA and C++, and changes the objects' keys so that they recompile."""
    sys.path.insert(0, str(ROOT / "tools"))
    import build as builder

    try:
        builder.find_cuda_home()
    except SystemExit:
        pytest.skip("no nvcc: the CUDA sources' commands need it")
    cfg = builder.load_config()
    torch_info = builder.Torch.detect()

    def jobs(defines):
        return builder.compile_jobs(cfg, "cuda", torch_info, "_ns", tmp_path, tmp_path, ["9.0"],
                                    1, [], extra_defines=defines)

    plain, defined = jobs(()), jobs(("LTX_LOAD_ONCE=2",))
    assert [j.src for j in plain] == [j.src for j in defined]
    assert any(j.src.suffix == ".cu" for j in defined)
    assert any(j.src.suffix == ".cpp" for j in defined)
    for a, b in zip(plain, defined):
        assert "-DLTX_LOAD_ONCE=2" in b.cmd and "-DLTX_LOAD_ONCE=2" not in a.cmd
        assert builder.job_key(a) != builder.job_key(b)
