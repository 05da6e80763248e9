"""The benchmark harnesses stay in step with the ops: every case of benchmarks/sweep.py is built
on small shapes on the CPU, its correctness check passes and every implementation runs; every
`kernels benchmark` workload in benchmarks/benchmark_<op>.py verifies against its reference."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import HAS_CUDA, ROOT, load_kernel

sys.path.insert(0, str(ROOT / "benchmarks"))

SMALL = {
    "rms_norm": (1, 8, 256), "fused_add_rms_norm": (1, 8, 256), "adaln": (2, 8, 256),
    "adaln_per_token": (2, 8, 256), "gated_residual_adaln": (2, 8, 256),
    "gated_residual": (2, 8, 256),
    "gelu_tanh": (2, 8, 256), "geglu": (2, 8, 512), "geglu_erf": (2, 8, 512), "silu_and_mul": (1, 8, 512),
    "silu_mul": (1, 8, 256),
    "rope_qk": (1, 4, 8, 64), "rope_qk_gqa": (1, 8, 4, 2, 64),
    "rms_norm_rope": (2, 8, 256), "rms_norm_rope_qk": (2, 8, 256),
    "rms_norm_rope_qk_shared": (2, 8, 256), "rms_norm_rope_qk_pairs": (2, 8, 256),
}


def rel_err(got, want):
    """The largest relative error over the outputs (a tuple: each of them)."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    return max(((g.double() - w.double()).norm() / w.double().norm()).item()
               for g, w in zip(got, want, strict=True))


@pytest.mark.parametrize("op", list(SMALL))
def test_sweep_cases(op, monkeypatch):
    import sweep

    assert set(SMALL) == set(sweep.TABLE), "a sweep op without a small test shape"
    monkeypatch.setattr(sweep, "DEVICE", "cpu")
    monkeypatch.setattr(sweep, "compiled", lambda name, fn: fn)  # eager stands in on the CPU
    case = sweep.TABLE[op][0](load_kernel("cpu"), None, SMALL[op], "bf16")
    assert case.nbytes > 0 and "ltx" in case.impls
    impl, ref = case.check
    assert rel_err((case.check_ours or case.impls[impl])(), ref()) < 2e-2
    for fn in case.impls.values():
        fn()
    # fused ops: every step of the unfused sequence runs, and it moves more bytes
    fused = op not in ("rms_norm", "gated_residual", "gelu_tanh", "rope_qk", "rope_qk_gqa")
    assert (case.unfused is not None) == fused
    for _, fns in case.unfused or []:
        assert fns
        for fn in fns.values():
            fn()
    if fused:
        assert case.unfused_nbytes > case.nbytes
        # the sequence computes the op: its last step's output is the reference's
        assert rel_err(case.unfused[-1][1]["eager"](), ref()) < 2e-2


def test_sweep_time_impls(monkeypatch, capsys):
    """One timing loop for ops and unfused steps: every implementation is timed, one that
    fails is named on stderr and left out."""
    import sweep

    monkeypatch.setattr(sweep, "bench", lambda fn, graph=True: fn())

    def broken():
        raise RuntimeError("no kernel image")

    times = sweep.time_impls({"eager": lambda: 2.0, "liger": broken}, "adaln 2x8x256 bf16", True)
    assert times == {"eager": 2.0}
    err = capsys.readouterr().err
    assert "# adaln 2x8x256 bf16 liger failed: RuntimeError: no kernel image" in err


def test_label_effect_parts(monkeypatch, capsys):
    """tools/experiments/label_effect.py times the same RMSNorm work in its four parts: the
    sweep's own orders per label (twice), random orders of one build, builds after pads, both
    shapes in the table's order; every timing names the one before it; the report has every
    part and ours against each peer round by round."""
    sys.path.insert(0, str(ROOT / "tools" / "experiments"))
    import label_effect
    import sweep

    monkeypatch.setattr(sweep, "DEVICE", "cpu")
    monkeypatch.setattr(sweep, "compiled", lambda name, fn: fn)
    outs = []

    def fake_bench(fn, graph=True):
        outs.append(fn())
        return float(len(outs))

    exp = label_effect.Experiment(load_kernel("cpu"), None, "bf16", None, fake_bench)
    shapes = [(1, 64, 256), (4, 16, 256)]
    label_effect.run(exp, shapes, list(label_effect.PARTS), trials=3, sweep_rounds=3, seed=1,
                     progress=lambda m: None)
    rows = exp.rows
    names = ["ltx", "eager", "F.rms_norm", "compile"]
    assert len(outs) == len(rows) and all(o.shape == torch.Size(s) for o, s in
                                          zip(outs, [tuple(map(int, r["shape"].split("x")))
                                                     for r in rows]))
    for shape in ("1x64x256", "4x16x256"):
        for rep in (0, 1):
            got = [r["impl"] for r in rows
                   if r["part"] == "replay" and r["shape"] == shape and r["trial"] == rep]
            want = [n for r in range(3)
                    for n in sweep.round_order(names, f"rms_norm {shape} bf16", r, "shuffle")]
            assert got == want
    assert rows[0]["before"] == "-"
    assert all(b["before"] == a["impl"] for a, b in zip(rows, rows[1:]))
    orders = [r for r in rows if r["part"] == "orders"]
    assert len(orders) == 3 * 4 and {r["shape"] for r in orders} == {"1x64x256"}
    assert len({r["round"] for r in orders}) == 3
    allocs = [r for r in rows if r["part"] == "allocs"]
    assert [r["impl"] for r in allocs] == names * 3
    assert all(r["pad_mib"] % 2 == 0 and 0 <= r["pad_mib"] <= 62 for r in allocs)
    labels = [r for r in rows if r["part"] == "labels"]
    assert [r["shape"] for r in labels[::4]] == ["1x64x256", "4x16x256"] * 2
    md = label_effect.summarize(rows, names)
    for section in ("## replay", "## orders", "## allocs", "## labels", "## every timing",
                    "Ours against each peer"):
        assert section in md
    # the ratio is taken within a round: ltx 10 / eager 20 and ltx 10 / eager 30
    two = [dict(part="labels", round=1, trial=0, shape="1x64x256", pad_mib=0, position=0,
                before="-", impl="ltx", us=10.0, out_ptr=""),
           dict(part="labels", round=1, trial=0, shape="1x64x256", pad_mib=0, position=1,
                before="ltx", impl="eager", us=20.0, out_ptr=""),
           dict(part="labels", round=2, trial=0, shape="4x16x256", pad_mib=0, position=0,
                before="eager", impl="ltx", us=10.0, out_ptr=""),
           dict(part="labels", round=2, trial=0, shape="4x16x256", pad_mib=0, position=1,
                before="ltx", impl="eager", us=30.0, out_ptr="")]
    assert "| eager | 2.50 | 2.00 | 3.00 | 2 |" in label_effect.summarize(two, ["ltx", "eager"])
    # an implementation that fails is named and left out; the others are timed
    def failing_bench(fn, graph=True):
        out = fn()
        if out.dtype == torch.bfloat16 and len(outs) % 2:
            outs.append(out)
            raise RuntimeError("no kernel image")
        outs.append(out)
        return 1.0

    exp = label_effect.Experiment(load_kernel("cpu"), None, "bf16", None, failing_bench)
    label_effect.run(exp, shapes[:1], ["labels"], trials=1, sweep_rounds=1, seed=0,
                     progress=lambda m: None)
    assert 0 < len(exp.rows) < 2 * 4
    assert "failed: RuntimeError: no kernel image" in capsys.readouterr().err
    # shapes that are not the same work are refused before anything runs
    with pytest.raises(SystemExit) as e:
        label_effect.main(["--device", "cpu", "--shapes", "1x64x256,1x64x128"])
    assert e.value.code == 2


def test_sweep_fused_table(tmp_path):
    """The markdown lists each fused op against its unfused sequence, with the target."""
    import sweep

    rows = [dict(op="adaln", shape="2x8x256", dtype="bf16", impl="ltx", us=10.0, GBps=1.0,
                 copy_share=0.5, MB=1.0, vs_best_peer=1.2, vs_unfused=1.5, bytes_ratio=1.9),
            dict(op="adaln", shape="2x8x256", dtype="bf16", impl="unfused", us=15.0, GBps=1.0,
                 copy_share=0.3, MB=1.0, vs_best_peer="",
                 steps="rms_norm: compile 7.0; modulate: compile 8.0")]
    meta = dict(gpu="test", torch="0", date="2026-11-29", copy_GBps=2.0)
    sweep.write_outputs(rows, tmp_path, meta, plot=False)
    md = (tmp_path / "sweep.md").read_text()
    assert ("| adaln | 2x8x256 | bf16 | 10.0 | 15.0 (rms_norm: compile 7.0; modulate: compile "
            "8.0) | 1.50x | 1.90 | not met |") in md
    assert "vs_unfused" in (tmp_path / "sweep.csv").read_text().splitlines()[0]
    # benchmarks/report.py rebuilds the same tables from the CSV
    import report

    (tmp_path / "sweep-meta.json").write_text(json.dumps(meta))
    assert report.main([str(tmp_path / "sweep.csv"), "--out", str(tmp_path / "re")]) == 0
    assert (tmp_path / "re" / "sweep.md").read_text() == md


def test_sweep_clock_log(tmp_path, monkeypatch):
    """--monitor: nvidia-smi's timestamped samples give each implementation the median clock
    of the samples inside its timed windows (time_impls keeps every round's windows), only
    once a sample after its last window has arrived; the CSV and the markdown carry them."""
    import datetime

    import sweep

    line = "2026/12/03 08:12:34.500, 1755, 612.25"
    t0 = datetime.datetime(2026, 12, 3, 8, 12, 34, 500000).timestamp()
    assert sweep.ClockLog.parse(line) == (t0, 1755.0, 612.25)
    for bad in ("2026/12/03 08:12:34.500, [N/A], 612.25", "timestamp, clocks.sm", ""):
        assert sweep.ClockLog.parse(bad) is None

    log = sweep.ClockLog()
    log.samples = [(0.0, 1980.0, 300.0), (1.0, 1700.0, 690.0), (1.5, 1720.0, 680.0),
                   (2.0, 1900.0, 400.0), (3.0, 1650.0, 700.0)]
    assert log.stats([(0.9, 1.6)]) == (1710.0, 685.0)
    assert log.stats([(0.9, 1.1), (2.9, 3.0)]) == (1675.0, 695.0)
    assert log.stats([(3.5, 3.6)]) is None  # no sample after the window yet
    assert log.stats([(0.2, 0.4)]) is None  # none inside

    # time_impls keeps each implementation's windows over its rounds
    calls = iter([(1.0, 1.2), (1.3, 1.4), (2.0, 2.1), (2.2, 2.3)])

    def fake_bench(fn, graph=True):
        sweep._windows.append(next(calls))
        return fn()

    monkeypatch.setattr(sweep, "bench", fake_bench)
    times = sweep.time_impls({"ltx": lambda: 1.0, "liger": lambda: 2.0}, "x", True, rounds=2,
                             order="alternate")
    assert times == {"ltx": 1.0, "liger": 2.0}
    # the alternating order: ltx, liger, then liger, ltx
    assert sweep.WINDOWS == {"ltx": [(1.0, 1.2), (2.2, 2.3)], "liger": [(1.3, 1.4), (2.0, 2.1)]}

    monkeypatch.setattr(sweep, "MONITOR", log)
    rows = [dict(op="rms_norm", shape="1x8x256", dtype="bf16", impl=impl, us=us, GBps=1.0,
                 copy_share=0.5, MB=1.0, vs_best_peer=v, _windows=w)
            for impl, us, v, w in (("ltx", 1.0, 1.0, [(0.9, 1.6)]),
                                   ("liger", 1.0, "", [(2.9, 3.0)]))]
    sweep.fill_clocks(rows)
    assert (rows[0]["sm_mhz"], rows[1]["sm_mhz"]) == (1710.0, 1650.0)
    meta = dict(gpu="test", torch="0", date="2026-12-03", copy_GBps=2.0)
    sweep.write_outputs(rows, tmp_path, meta, plot=False)
    assert "| rms_norm | 1x8x256 | bf16 | 1710 | 1650 |" in (tmp_path / "sweep.md").read_text()
    header = (tmp_path / "sweep.csv").read_text().splitlines()[0]
    assert header.endswith(",sm_mhz,power_w") and "_windows" not in header


def test_sweep_clock_log_process(tmp_path, monkeypatch):
    """--monitor's background nvidia-smi: asked for the device nvidia-smi numbers as torch's
    (scripts/_common's GpuMonitor.device_index), its lines read into samples until stopped; no
    monitor where the index cannot be found."""
    import sweep
    from scripts._common import GpuMonitor

    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho \"$@\" > " + str(tmp_path / "args") + "\n"
                    "echo '2026/12/03 08:12:34.500, 1755, 612.25'\n"
                    "echo '2026/12/03 08:12:34.550, [N/A], 600.0'\n"
                    "echo '2026/12/03 08:12:34.600, 1980, 300.5'\nsleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sweep.shutil, "which", lambda name: str(fake))
    monkeypatch.setattr(sweep.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(GpuMonitor, "device_index", staticmethod(lambda exe, device: None))
    assert not sweep.ClockLog().start()
    monkeypatch.setattr(GpuMonitor, "device_index", staticmethod(lambda exe, device: "3"))
    log = sweep.ClockLog()
    assert log.start()
    for _ in range(100):
        if len(log.samples) == 2:
            break
        time.sleep(0.05)
    log.stop()
    assert [(m, w) for _, m, w in log.samples] == [(1755.0, 612.25), (1980.0, 300.5)]
    assert "--id=3" in (tmp_path / "args").read_text()


def test_sweep_plot_per_dtype(tmp_path, monkeypatch):
    """One plot per dtype measured: sweep.png for bf16 (or the only dtype), sweep-<dtype>.png
    for the others; an fp16-only sweep plots its fp16 rows (it once drew empty bf16 axes)."""
    import sweep

    def row(dt, impl, mb, gbps):
        return dict(op="rms_norm", shape="1x8x256", dtype=dt, impl=impl, us=1.0, GBps=gbps,
                    copy_share=0.5, MB=mb, vs_best_peer="")

    assert sweep.plot_files([row("bf16", "ltx", 1, 1), row("fp16", "ltx", 1, 1)]) == {
        "bf16": "sweep.png", "fp16": "sweep-fp16.png"}
    assert sweep.plot_files([row("fp16", "ltx", 1, 1)]) == {"fp16": "sweep.png"}
    pytest.importorskip("matplotlib")
    meta = dict(gpu="test", torch="0", date="2026-11-30", copy_GBps=2.0)
    rows = [row("fp16", "ltx", 1.0, 500.0), row("fp16", "ltx", 10.0, 900.0),
            row("bf16", "ltx", 1.0, 400.0)]
    drawn = []
    import matplotlib.axes

    orig = matplotlib.axes.Axes.plot

    def spy(self, x, y, *a, **k):
        drawn.append((list(x), list(y)))
        return orig(self, x, y, *a, **k)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    sweep.write_outputs(rows, tmp_path, meta)
    assert (tmp_path / "sweep.png").stat().st_size > 0
    assert (tmp_path / "sweep-fp16.png").stat().st_size > 0
    assert ([1.0], [400.0]) in drawn and ([1.0, 10.0], [500.0, 900.0]) in drawn


def test_kernels_benchmark_workloads():
    """The workloads' references agree with the ops as `kernels benchmark` checks them
    (allclose, atol 1e-2): every bf16 workload at its real size, on the CPU."""
    from kernels.cli.benchmark import discover_benchmark_classes

    k = load_kernel("cpu")
    n = 0
    for script in sorted((ROOT / "benchmarks").glob("benchmark*.py")):
        for cls in discover_benchmark_classes(script, ROOT):
            for name in [m[len("benchmark_"):] for m in dir(cls) if m.startswith("benchmark_")]:
                if "bf16" not in name:
                    continue  # fp16 on the CPU is slow; same code path
                inst = cls()
                inst.kernel, inst.device = k, "cpu"
                getattr(inst, f"setup_{name}")()
                getattr(inst, f"benchmark_{name}")()
                ref = getattr(inst, f"verify_{name}")()
                assert torch.allclose(inst.out, ref, atol=1e-2), f"{script.name}: {name}"
                n += 1
    assert n >= 10


def test_sanitize_ops_calls(monkeypatch):
    """tools/sanitize_ops.py (run under compute-sanitizer on a GPU) makes valid calls: every one
    of them runs on the CPU (bf16; fp16 and fp32 take the same calls)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import sanitize_ops

    monkeypatch.setattr(sanitize_ops, "DEVICE", "cpu")
    k = load_kernel("cpu")
    n = want = 0
    for name, fn in sanitize_ops.OPS.items():
        shapes = sanitize_ops.shapes_of(name)
        want += len(shapes) * 3
        for shape in shapes:
            for _, x in sanitize_ops.views(shape, torch.bfloat16):
                fn(k, x)
                n += 1
    assert n == want
    # families with shapes of their own run those, not SHAPES (rms_norm_grids: one large grid)
    assert sanitize_ops.shapes_of("rms_norm_grids") == [(1100, 4104)]
    assert sanitize_ops.shapes_of("rms_norm") == sanitize_ops.SHAPES


def test_ncu_csv_rows_parse(capsys):
    """tools/ncu_csv_rows.py groups Nsight Compute's one-row-a-metric `--csv` output by kernel,
    skipping ncu's own lines: run AA's application-replay file (three RMSNorm shapes, ours and
    Liger's kernel each), as it came back from the device."""
    sys.path.insert(0, str(ROOT / "tools"))
    import ncu_csv_rows

    path = ROOT / "benchmarks/results/h200/run-aa/call1/ncu-zero.csv"
    rows = ncu_csv_rows.rows(str(path))
    assert [i for i, _ in rows] == ["0", "1", "2", "3", "4", "5"]
    names = [name for _, name in rows]
    assert all("rms_norm_dense_kernel" in n for n in names[0::2])
    assert all("_rms_norm_forward_kernel" in n for n in names[1::2])
    first = rows[("0", names[0])]
    assert first["gpu__time_duration.sum"] == "16,128 ns"
    assert first["dram__bytes_read.sum"] == "22,033,408 byte"
    assert len(first) == 8
    assert ncu_csv_rows.main([str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 6 and out[1].startswith("1 _rms_norm_forward_kernel")
    assert ncu_csv_rows.main([]) == 2


def test_ncu_ops_rejects_unknown_flush():
    """tools/ncu_ops.py refuses an NCU_FLUSH other than zero / read before touching a device."""
    env = {**os.environ, "NCU_FLUSH": "sweep"}
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "ncu_ops.py"), "rms_norm:1x16x4096"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "expected zero or read" in p.stderr


def test_gemm_attention_probe_needs_cuda_or_runs():
    """tools/gemm_attention_probe.py: without CUDA it says so and exits 2; with CUDA one case
    (the text projection) gives a table row with its time, memset count and kernel."""
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gemm_attention_probe.py"),
                        "--only", "text kv", "--calls", "3", "--replays", "2"],
                       capture_output=True, text=True, timeout=600)
    if not HAS_CUDA:
        assert p.returncode == 2 and "no CUDA device" in p.stderr
        return
    assert p.returncode == 0, p.stderr[-3000:]
    row = [line for line in p.stdout.splitlines() if line.startswith("| linear text kv")]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert float(cells[1]) > 0 and cells[2].isdigit() and cells[3]


def test_resources_report_parse():
    """tools/resources.py reads registers, stack, shared and local bytes per kernel from
    cuobjdump's resource report (a real excerpt, sm_90), with demangled short names."""
    sys.path.insert(0, str(ROOT / "tools"))
    import resources

    text = """
Resource usage:
 Common:
  GLOBAL:28 CONSTANT[4]:224
 Function _ZN3ltx12adaln_kernelI13__nv_bfloat16S1_S1_Li8ELi4ELb0EEEvNS_11AdaLNParamsIT_T0_T1_EE:
  REG:64 STACK:0 SHARED:1152 LOCAL:0 CONSTANT[0]:936 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _ZN3ltx12adaln_kernelI13__nv_bfloat16S1_S1_Li1ELi8ELb1EEEvNS_11AdaLNParamsIT_T0_T1_EE:
  REG:40 STACK:8 SHARED:1152 LOCAL:0 CONSTANT[0]:936 TEXTURE:0 SURFACE:0 SAMPLER:0
"""
    rows = resources.parse_resource_usage(text)
    assert [s for _, s in rows] == [(64, 0, 1152, 0), (40, 8, 1152, 0)]
    if resources.shutil.which("c++filt"):
        assert rows[0][0] == "void ltx::adaln_kernel<bf16, bf16, bf16, 8, 4, false>"


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_gpu_ab_applies_times_and_restores(tmp_path, reverse):
    """tools/gpu_ab.sh in a scratch git repository, with stand-ins for python3 (build, sweep and
    pytest record which version of the source they saw): A runs on the tree as it is, B and its
    tests on the patched tree, the comparison reads both sweeps, and the tree is restored. With
    AB_REVERSE=1 the tree holds the change already: A runs with the patch reversed, B on the
    tree, which is left as it was."""
    import shutil

    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    for name in ("gpu_ab.sh", "gpu_env.sh", "ab_table.py"):
        shutil.copy(ROOT / "tools" / name, repo / "tools" / name)
    src = repo / "kernel.cu"
    src.write_text("int version = 1;\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "a"], cwd=repo, check=True)
    src.write_text("int version = 2;\n")
    patch = tmp_path / "b.patch"
    patch.write_text(subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True,
                                    check=True).stdout)
    if not reverse:
        subprocess.run(["git", "checkout", "-q", "kernel.cu"], cwd=repo, check=True)

    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text(f"""#!/bin/bash
v=$(grep -o '[0-9]' kernel.cu)
case "$1" in
  tools/build.py) echo "build v$v" >> {tmp_path}/calls ;;
  benchmarks/sweep.py)
    out=$(echo "$@" | sed 's/.*--out \\([^ ]*\\).*/\\1/'); mkdir -p "$out"
    echo "sweep v$v" >> {tmp_path}/calls
    printf 'op,shape,dtype,impl,us\\ngeglu,1x8,bf16,ltx,%s\\n' $((12 - v)) > "$out/sweep.csv" ;;
  -m) [[ $2 == pytest ]] && echo "tests v$v" >> {tmp_path}/calls ;;
  *) exec {sys.executable} "$@" ;;
esac
""")
    stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}",
           "OUT": str(tmp_path / "out"), "AB_PATCH": str(patch), "AB_OPS": "geglu",
           "AB_TESTS": "tests/x.py", "AB_REVERSE": "1" if reverse else "0"}
    r = subprocess.run(["bash", "tools/gpu_ab.sh"], cwd=repo, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "calls").read_text().split("\n")[:5] == [
        "build v1", "sweep v1", "build v2", "sweep v2", "tests v2"]
    assert "| geglu | 1x8 | bf16 | 11.0 | 10.0 | 0.909 |" in r.stdout
    assert src.read_text() == f"int version = {2 if reverse else 1};\n"  # as it was


def test_use_prebuilt_unpacks_and_takes_the_tree_python(tmp_path):
    """tools/gpu_prebuilt.sh: use_prebuilt NAME replaces build/<variant> with the archive's
    (the compiled library), then copies the tree's Python package over it; a missing archive is
    an error, not an empty build."""
    import tarfile

    v = "torch211-cxx11-cu130-x86_64-linux"
    staged = tmp_path / "staged" / v
    staged.mkdir(parents=True)
    (staged / "_lib.abi3.so").write_text("lib")
    (staged / "rope.py").write_text("old")
    (tmp_path / ".prebuilt").mkdir()
    with tarfile.open(tmp_path / ".prebuilt" / "X.tar.xz", "w:xz") as t:
        t.add(staged, arcname=v)
    (tmp_path / "build" / v).mkdir(parents=True)
    (tmp_path / "build" / v / "stale.so").write_text("stale")
    (tmp_path / "torch-ext" / "ltx_kernels").mkdir(parents=True)
    (tmp_path / "torch-ext" / "ltx_kernels" / "rope.py").write_text("new")
    script = f"source {ROOT}/tools/gpu_prebuilt.sh && use_prebuilt X && use_prebuilt Y"
    r = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ}, timeout=60)
    assert r.returncode != 0 and "no .prebuilt/Y.tar.xz" in r.stderr
    assert "== prebuilt X: _lib.abi3.so" in r.stdout
    out = tmp_path / "build" / v
    assert sorted(p.name for p in out.iterdir()) == ["_lib.abi3.so", "rope.py"]
    assert (out / "rope.py").read_text() == "new"


def bash_with_stub(tmp_path, script, stub, *, tool="python3", cwd=None):
    """`script` run by bash (in cwd, default tmp_path) with tmp_path/bin/<tool>, a file of the
    text `stub`, first on PATH: how the device helpers in tools/*.sh are tested without the
    programs they call. Returns the finished process."""
    path = tmp_path / "bin" / tool
    path.parent.mkdir(exist_ok=True)
    path.write_text(stub)
    path.chmod(0o755)
    env = {**os.environ, "PATH": f"{path.parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], cwd=cwd or tmp_path, capture_output=True,
                          text=True, env=env, timeout=60)


def prebuilt_call(tmp_path, call, stub):
    """`call` (a tools/gpu_prebuilt.sh function and its arguments) with OUT=tmp_path/out and
    LOG=tmp_path/run.log, under bash_with_stub's python3 `stub`; it must succeed. Returns OUT
    and the log's text."""
    out, log = tmp_path / "out", tmp_path / "run.log"
    out.mkdir()
    r = bash_with_stub(tmp_path, f"source {ROOT}/tools/gpu_prebuilt.sh && OUT={out} && "
                       f"LOG={log} && {call}", stub)
    assert r.returncode == 0, r.stdout + r.stderr
    return out, log.read_text()


def test_on_h200_and_issue5_all(tmp_path):
    """tools/gpu_prebuilt.sh: on_h200 is true only where nvidia-smi names an H200; issue5_all
    runs LTX 2B's every configuration at issue 5's setting, then LLaMA and memcheck while the
    call has time (here the steps are recorded, not run)."""
    names = {"H200": "NVIDIA H200", "H100": "NVIDIA H100 80GB HBM3"}
    for card, name in names.items():
        r = bash_with_stub(tmp_path, f"source {ROOT}/tools/gpu_prebuilt.sh && on_h200",
                           f"#!/bin/bash\necho '{name}'\n", tool="nvidia-smi")
        assert r.returncode == (0 if card == "H200" else 1), card
    steps = (f"ltx_e2e() {{ echo \"ltx $* [$LTX_E2E_ARGS] [$LTX_E2E_KERNELS]\" "
             f">> {tmp_path}/calls; }}; "
             f"llama_e2e() {{ echo \"llama $*\" >> {tmp_path}/calls; }}; "
             f"sanitize() {{ echo \"sanitize $SANITIZE_TOOLS $*\" >> {tmp_path}/calls; }}; ")
    # each later step only where it fits: LLaMA needs 100 s, memcheck 60
    for budget, want in ((560, ["llama", "sanitize"]), (100, ["sanitize"]), (50, [])):
        (tmp_path / "calls").unlink(missing_ok=True)
        r = bash_with_stub(tmp_path, f"source {ROOT}/tools/gpu_prebuilt.sh && {steps}"
                           f"LOG={tmp_path}/run.log CALL_BUDGET={budget} "
                           f"CALL_T0=$(date +%s) && issue5_all", "#!/bin/bash\n")
        assert r.returncode == (0 if "sanitize" in want else 1), r.stdout + r.stderr
        calls = (tmp_path / "calls").read_text().splitlines()
        assert [c.split()[0] for c in calls] == ["ltx"] + want, calls
        assert calls[0].startswith("ltx ltx-all 290 --all-configs [--cuda-graph ")
        assert calls[0].endswith("[rms_norm_dense|gated_residual_flat|adaln_dense|"
                                 "rms_norm_rope_dense]")
        if "llama" in want:
            assert calls[1] == "llama 100"
        if "sanitize" in want:
            assert re.fullmatch(r"sanitize memcheck all \d+", calls[-1]), calls[-1]


def test_full_table_draws_a_cut_plot(tmp_path):
    """tools/gpu_prebuilt.sh: where full_table's limit left a CSV without its plot, the plot is
    drawn from the CSV by benchmarks/report.py and packed with the table; a sweep that drew its
    own plot is left as it is (test_full_table_and_ltx_time)."""
    import tarfile

    stub = f"""#!/bin/bash
echo "$*" >> {tmp_path}/calls
case "$1" in
  benchmarks/sweep.py) out=${{@: -1}}; mkdir -p "$out"; echo 'op,shape' > "$out/sweep.csv"
    exit 124 ;;
  benchmarks/report.py) touch "$4/sweep.png" ;;
esac
"""
    out, log = prebuilt_call(tmp_path, f"W={tmp_path}/w && full_table bf16 300", stub)
    d = tmp_path / "w" / "full-bf16"
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[1:] == [f"benchmarks/report.py {d}/sweep.csv --out {d}",
                         f"tools/targets.py {d}/sweep.csv"], calls
    assert "rc 124 (0 cases)" in log and "the plot drawn from the CSV" in log
    with tarfile.open(out / "sweeps-bf16.tar.gz") as t:
        assert "full-bf16/sweep.png" in t.getnames()


def test_issue5_pair(tmp_path):
    """tools/gpu_prebuilt.sh: issue5_pair times LTX kernels + compile, then torch.compile while
    the call has 120 s left, each through ltx_time at issue 5's setting (recorded, not run)."""
    steps = (f"ltx_time() {{ echo \"ltx $* [$LTX_E2E_ARGS]\" >> {tmp_path}/calls; }}; ")
    for budget, want in ((560, ["kernels+compile 130", "compile 120"]),
                         (100, ["kernels+compile 130"])):
        (tmp_path / "calls").unlink(missing_ok=True)
        bash_with_stub(tmp_path, f"source {ROOT}/tools/gpu_prebuilt.sh && {steps}"
                       f"LOG={tmp_path}/run.log CALL_BUDGET={budget} "
                       f"CALL_T0=$(date +%s) && issue5_pair", "#!/bin/bash\n")
        calls = (tmp_path / "calls").read_text().splitlines()
        assert [c.split(" [")[0] for c in calls] == [f"ltx {w}" for w in want], calls
        assert all(c.endswith("[--cuda-graph --freeze --gelu-in-matmul --fuse-projections "
                              "--cublaslt-workspace-kib 0]") for c in calls), calls


def test_llama_rounds(tmp_path):
    """tools/gpu_prebuilt.sh: llama_rounds LIMIT runs benchmark_transformers.py on compile and
    kernels + compile alone, 15 rounds of 5 forwards of 4096 tokens, its JSON under OUT, and
    copies the per-round lines and the exit status to the log (python3 is a stub here)."""
    stub = f"""#!/bin/bash
echo "$@" > {tmp_path}/args
echo "  round 1/15: compile 101.65, kernels+compile 101.21 ms (median)"
echo "setup noise that stays out of the log"
exit 3
"""
    out, log = prebuilt_call(tmp_path, "llama_rounds 40", stub)
    args = (tmp_path / "args").read_text().split()
    assert args[0] == "scripts/benchmark_transformers.py"
    for flag, value in (("--seq-len", "4096"), ("--rounds", "15"), ("--iterations", "5"),
                        ("--configs", "compile,kernels+compile"),
                        ("--json", f"{out}/llama-rounds.json")):
        assert args[args.index(flag) + 1] == value, flag
    assert "round 1/15: compile 101.65, kernels+compile 101.21 ms (median)" in log
    assert "rc 3" in log and "setup noise" not in log
    assert "setup noise" in (out / "llama-rounds.log").read_text()


def test_knob_tests_and_time_left(tmp_path):
    """tools/gpu_prebuilt.sh: time_left is the call's budget less the time since
    experiment_start and 15 s for packing; knob_tests runs test_stage_knobs.py's settings
    matching a -k expression (all of them for an empty one) through run_tests under the limit
    it is given, each setting's child pytest with 16 workers."""
    stub = f"""#!/bin/bash
echo "workers=$LTX_KNOB_TEST_WORKERS $*" >> {tmp_path}/calls
"""
    t0 = "CALL_T0=$(( $(date +%s) - 100 ))"
    out, log = prebuilt_call(
        tmp_path, f"{t0} && echo left $(time_left) $(time_left 300) >> {tmp_path}/calls && "
        f"knob_tests tk 50 'one-warp or several-warps' && CALL_BUDGET=200 knob_tests all "
        f"$(CALL_BUDGET=200 time_left) ''", stub)
    calls = (tmp_path / "calls").read_text().splitlines()
    left, left300 = (int(v) for v in calls[0].split()[1:])
    assert 444 <= left <= 445 and 184 <= left300 <= 185  # 560 - 100 - 15; 300 - 100 - 15
    xml = f"--junitxml={out}/tk.xml"
    assert calls[1] == ("workers=16 -m pytest -q -p no:cacheprovider -rf " + xml
                        + " --durations=20 -k one-warp or several-warps tests/test_stage_knobs.py")
    assert calls[2].startswith("workers=16 -m pytest") and " -k " not in calls[2]
    assert calls[2].endswith("--durations=20 tests/test_stage_knobs.py")
    assert "knob settings 'one-warp or several-warps', 50 s" in log
    assert "knob settings 'all', 8" in log  # 200 - 100 - 15 = 85 (84 across a second)


def test_gpu_env_site_tar_replaces_the_wheels(tmp_path):
    """tools/gpu_env.sh: SITE_TAR (device_wheels.sh --packed) is unpacked to /tmp/site and put on
    PYTHONPATH, and the wheels in WHEELS are then not installed; without it the wheels are."""
    import tarfile

    pkg = tmp_path / "pkg" / "packedpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    site_tar = tmp_path / "site.tar.xz"
    with tarfile.open(site_tar, "w:xz") as t:
        t.add(pkg, arcname="packedpkg")
    (tmp_path / "whl").mkdir()
    (tmp_path / "whl" / "a-1-py3-none-any.whl").write_text("")
    (tmp_path / "requirements.txt").write_text("")
    site = tmp_path / "site"
    # /tmp/site is the device's folder; here a copy of gpu_env.sh writes under tmp_path
    (tmp_path / "gpu_env.sh").write_text(
        (ROOT / "tools" / "gpu_env.sh").read_text().replace("/tmp/site", str(site)))
    stub = f"""#!/bin/bash
[[ $1 == -m && $2 == pip ]] && echo "pip $*" >> {tmp_path}/calls && exit 0
exec {sys.executable} "$@"
"""
    env = f"OUT={tmp_path}/out WHEELS={tmp_path}/whl"
    r = bash_with_stub(tmp_path, f"{env} SITE_TAR={site_tar} && source gpu_env.sh && "
                       "echo $PYTHONPATH && python3 -c 'import packedpkg; print(packedpkg.X)'",
                       stub)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == [str(site), "1"]
    assert not (tmp_path / "calls").exists()  # no wheel installed
    r = bash_with_stub(tmp_path, f"{env} && source gpu_env.sh", stub)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "--target " + str(site) in (tmp_path / "calls").read_text()


def run_with_stub_sweep(tmp_path, us_line, call_line, script, extra_rows=""):
    """`script` (bash) in tmp_path with tools/ab_table.py beside it and a `python3` on PATH whose
    `benchmarks/sweep.py` writes one case, geglu 1x8 bf16, at the time us_line sets ($us) (and
    `extra_rows`, CSV lines) and appends call_line's output to tmp_path/calls (every other
    python3 call is the real one)."""

    (tmp_path / "tools").mkdir(exist_ok=True)
    (tmp_path / "tools" / "ab_table.py").write_text((ROOT / "tools" / "ab_table.py").read_text())
    stub = f"""#!/bin/bash
if [[ $1 == benchmarks/sweep.py ]]; then
  out=$(echo "$@" | sed 's/.*--out \\([^ ]*\\).*/\\1/'); mkdir -p "$out"
  {us_line}
  {call_line} >> {tmp_path}/calls
  printf 'op,shape,dtype,impl,us\\ngeglu,1x8,bf16,ltx,%s\\n{extra_rows}' "$us" > "$out/sweep.csv"
else
  exec {sys.executable} "$@"
fi
"""
    r = bash_with_stub(tmp_path, script, stub)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_prebuilt_ab_alternates_and_picks_the_faster(tmp_path):
    """tools/gpu_prebuilt.sh: prebuilt_ab A B OPS DIR times our kernels from A, B, A, B (each
    sweep sees the library of its side), writes both sides' table to DIR/ab.md; prebuilt_faster
    names the side that is faster at one case, and nothing for a case the table lacks."""
    import tarfile

    v = "torch211-cxx11-cu130-x86_64-linux"
    (tmp_path / ".prebuilt").mkdir()
    for name, us in (("A", 10.0), ("B", 8.0)):
        staged = tmp_path / "staged" / name / v
        staged.mkdir(parents=True)
        (staged / "_lib.abi3.so").write_text(str(us))
        with tarfile.open(tmp_path / ".prebuilt" / f"{name}.tar.xz", "w:xz") as t:
            t.add(staged, arcname=v)
    (tmp_path / "torch-ext" / "ltx_kernels").mkdir(parents=True)
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && prebuilt_ab A B geglu {tmp_path}/ab && "
              f"echo faster=$(prebuilt_faster {tmp_path}/ab/ab.md geglu 1x8 bf16 A B) && "
              f"echo missing=$(prebuilt_faster {tmp_path}/ab/ab.md geglu 2x8 bf16 A B)")
    r = run_with_stub_sweep(tmp_path, f"us=$(cat build/{v}/_lib.abi3.so)", 'echo "$us"', script)
    assert (tmp_path / "calls").read_text().split() == ["10.0", "8.0", "10.0", "8.0"]
    assert "| geglu | 1x8 | bf16 | 10.0 (10.0 10.0) | 8.0 (8.0 8.0) | 0.800 |" in r.stdout
    assert (tmp_path / "ab" / "ab.md").read_text().count("| geglu |") == 1
    assert r.stdout.splitlines()[-2:] == ["faster=B", "missing="]


def test_knob_ab_alternates_settings(tmp_path):
    """tools/gpu_prebuilt.sh: knob_ab OPS DIR NAME=ENV... times our kernels under each knob
    setting (its variables set for that sweep only, none for an empty setting), the second
    round in reverse order, and writes the first setting against each other one."""
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && knob_ab geglu {tmp_path}/ab "
              "'base=' 'a=LTX_A=2' 'ab=LTX_A=1,LTX_B=4'")
    r = run_with_stub_sweep(tmp_path, "us=$((10 + ${LTX_A:-0} + ${LTX_B:-0}))",
                            'echo "${LTX_A:--},${LTX_B:--}"', script)
    assert (tmp_path / "calls").read_text().split() == ["-,-", "2,-", "1,4", "1,4", "2,-", "-,-"]
    assert "| geglu | 1x8 | bf16 | 10.0 (10.0 10.0) | 12.0 (12.0 12.0) | 1.200 |" in r.stdout
    assert (tmp_path / "ab" / "ab-ab.md").read_text().count("| 15.0 (15.0 15.0) | 1.500 |") == 1
    assert "== base against a" in r.stdout and "== base against ab" in r.stdout


def test_knob_ab_with_a_peer(tmp_path):
    """knob_ab with AB_PEER and AB_ARGS: every sweep times the peer too, with the extra
    arguments, and the tables carry the peer's columns (ab_table.py --peer)."""
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && AB_PEER=liger AB_ARGS='--rounds 2' "
              f"knob_ab geglu {tmp_path}/ab 'early=' 'late=LTX_L=1'")
    r = run_with_stub_sweep(tmp_path, "us=$((10 - ${LTX_L:-0}))",
                            'echo "$@" | grep -o "impls [^ ]* --rounds 2"', script,
                            extra_rows="geglu,1x8,bf16,liger,9\\n")
    assert (tmp_path / "calls").read_text().splitlines() == ["impls ltx,liger --rounds 2"] * 4
    assert ("| geglu | 1x8 | bf16 | 10.0 (10.0 10.0) | 9.0 (9.0 9.0) | 0.900 | 9.0 (9.0 9.0) | "
            "9.0 (9.0 9.0) | 0.900 | 1.000 |") in r.stdout


def test_ncu_flush_profiles_with_the_sweeps_flush(tmp_path):
    """tools/gpu_prebuilt.sh: ncu_flush NAME FLUSH IMPLS LIMIT CASE... runs ncu on
    tools/ncu_ops.py with the flush and implementations in its environment (and the caller's
    knobs), the L2 left as the flush leaves it and application replay, the default metrics
    unless NCU_METRICS says others (or NCU_SECTIONS sections), into $OUT/ncu-NAME.csv; one
    line a kernel in $LOG."""

    real = ROOT / "benchmarks" / "results" / "h200" / "run-aa" / "call1" / "ncu-zero.csv"
    stub = f"""#!/bin/bash
echo "$NCU_FLUSH $NCU_IMPLS ${{LTX_KNOB:--}} $*" >> {tmp_path}/calls
cat {real}
"""
    out = tmp_path / "out"
    out.mkdir()
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && OUT={out} && LOG={out}/x.log && "
              "LTX_KNOB=7 ncu_flush late zero ltx,liger 30 rms_norm:2x2688x2048 && "
              "NCU_METRICS=a.sum ncu_flush r read ltx 30 rms_norm:1x4096x4096 && "
              "NCU_SECTIONS='WarpStateStats MemoryWorkloadAnalysis' "
              "ncu_flush s read ltx 30 rms_norm:1x4096x4096")
    r = bash_with_stub(tmp_path, script, stub, tool="ncu", cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    first, second, third = (tmp_path / "calls").read_text().splitlines()
    assert first.startswith("zero ltx,liger 7 --clock-control none --cache-control none "
                            "--replay-mode application")
    assert "gpu__time_duration.sum,dram__bytes_read.sum" in first
    assert first.endswith("--csv python3 tools/ncu_ops.py rms_norm:2x2688x2048")
    assert second.startswith("read ltx - ") and "--metrics a.sum --csv" in second
    assert "--metrics" not in third and \
        "--section WarpStateStats --section MemoryWorkloadAnalysis --csv" in third
    assert (out / "ncu-late.csv").read_text() == real.read_text()
    log = (out / "x.log").read_text()
    assert log.count("rc 0") == 3
    assert "rms_norm_dense_kernel" in log and "gpu__time_duration.sum=" in log


def test_experiment_end_packs_out(tmp_path):
    """tools/gpu_prebuilt.sh: experiment_end leaves $OUT with the summary log and one archive of
    every other file (at most 8 files come back from a device call)."""
    import tarfile

    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    for name in ("x1.log", "e2e.json", "tests-a.log", "sub/ncu.txt", "x1.tar.gz"):
        (out / name).write_text(name)
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && OUT={out} && LOG={out}/x1.log && "
              "experiment_end")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in out.iterdir() if p.is_file()) == ["x1-files.tar.gz", "x1.log"]
    with tarfile.open(out / "x1-files.tar.gz") as t:
        assert sorted(t.getnames()) == ["e2e.json", "sub/ncu.txt", "tests-a.log", "x1.tar.gz"]
    log = (out / "x1.log").read_text()
    assert "== done" in log and "packed into x1-files.tar.gz" in log


def test_report_merges_later_runs_in_table_order(tmp_path):
    """benchmarks/report.py: a later CSV's rows replace an earlier one's for the same case, a
    case only the later one has lands among its op's shapes in sweep's table order (not at the
    end), and --note reaches the table's header."""
    import csv as csvmod
    import json

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import report

    fields = ["op", "shape", "dtype", "impl", "us", "GBps", "copy_share", "MB", "vs_best_peer",
              "vs_unfused", "bytes_ratio", "steps"]

    def write(name, cases):
        d = tmp_path / name
        d.mkdir()
        with open(d / "sweep.csv", "w", newline="") as f:
            w = csvmod.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for op, shape, us in cases:
                w.writerow(dict(op=op, shape=shape, dtype="bf16", impl="ltx", us=us, GBps=1000,
                                copy_share=0.5, MB=10, vs_best_peer=1.0))
        (d / "sweep-meta.json").write_text(json.dumps(
            dict(gpu="G", torch="t", date="d", copy_GBps=2000.0)))
        return d / "sweep.csv"

    a = write("a", [("adaln", "2x2688x2048", 30), ("adaln_per_token", "2x2688x2048", 40),
                    ("gelu_tanh", "2x2688x8192", 50)])
    b = write("b", [("adaln", "2x2688x2048", 20), ("adaln_per_token", "2x6144x2048", 60)])
    report.main([str(a), str(b), "--out", str(tmp_path / "out"), "--note", "Runs A and B."])
    md = (tmp_path / "out" / "sweep.md").read_text()
    body = [line for line in md.splitlines() if line.startswith("| ") and "bf16" in line]
    assert [line.split(" | ")[:2] for line in body] == [
        ["| adaln", "2x2688x2048"], ["| adaln_per_token", "2x2688x2048"],
        ["| adaln_per_token", "2x6144x2048"], ["| gelu_tanh", "2x2688x8192"]]
    assert "| 20.0 (50%) |" in body[0]  # b's time, not a's
    assert md.splitlines()[0].endswith("Runs A and B.")


def sweep_csv(tmp_path, name, rows):
    """A sweep.csv with the columns tools/ab_table.py reads: rows (op, impl, us) at 1x8 bf16."""
    p = tmp_path / f"{name}.csv"
    p.write_text("op,shape,dtype,impl,us\n" + "".join(
        f"{op},1x8,bf16,{impl},{us}\n" for op, impl, us in rows))
    return str(p)


def test_ab_table_runs_per_side(tmp_path):
    """tools/ab_table.py: one CSV a side, or several a side after `--` (each side's mean, each
    run listed); a case missing from any run is left out; a side without runs is an error."""

    a1 = sweep_csv(tmp_path, "a1", [("geglu", "ltx", 10.0), ("rope", "ltx", 4.0),
                                    ("geglu", "compile", 1.0)])
    a2 = sweep_csv(tmp_path, "a2", [("geglu", "ltx", 12.0)])
    b1 = sweep_csv(tmp_path, "b1", [("geglu", "ltx", 9.0), ("rope", "ltx", 2.0)])
    b2 = sweep_csv(tmp_path, "b2", [("geglu", "ltx", 13.0), ("rope", "ltx", 2.0)])
    tool = [sys.executable, str(ROOT / "tools" / "ab_table.py")]

    def run(*args):
        return subprocess.run([*tool, *args], capture_output=True, text=True)

    one = run(a1, b1).stdout
    assert "| geglu | 1x8 | bf16 | 10.0 | 9.0 | 0.900 |" in one
    assert "| rope | 1x8 | bf16 | 4.0 | 2.0 | 0.500 |" in one and "compile" not in one
    two = run(a1, a2, "--", b1, b2).stdout
    assert "| geglu | 1x8 | bf16 | 11.0 (10.0 12.0) | 11.0 (9.0 13.0) | 1.000 |" in two
    assert "rope" not in two  # not in a2
    assert run(a1, "--").returncode != 0 and run(a1).returncode != 0


def test_ab_table_peer_columns(tmp_path):
    """tools/ab_table.py --peer NAME: each side's peer time (from the same runs) and peer / ours
    a side; a case without the peer in some run is left out; --peer without a name is an
    error."""

    a1 = sweep_csv(tmp_path, "a1", [("rms", "ltx", 10.0), ("rms", "liger", 9.0),
                                    ("add", "ltx", 4.0)])
    a2 = sweep_csv(tmp_path, "a2", [("rms", "ltx", 12.0), ("rms", "liger", 11.0),
                                    ("add", "ltx", 4.0)])
    b1 = sweep_csv(tmp_path, "b1", [("rms", "ltx", 8.0), ("rms", "liger", 9.0),
                                    ("add", "ltx", 2.0)])
    b2 = sweep_csv(tmp_path, "b2", [("rms", "ltx", 12.0), ("rms", "liger", 11.0),
                                    ("add", "ltx", 2.0), ("add", "liger", 3.0)])
    tool = [sys.executable, str(ROOT / "tools" / "ab_table.py")]
    out = subprocess.run([*tool, "--peer", "liger", a1, a2, "--", b1, b2],
                         capture_output=True, text=True, check=True).stdout
    assert ("| rms | 1x8 | bf16 | 11.0 (10.0 12.0) | 10.0 (8.0 12.0) | 0.909 | "
            "10.0 (9.0 11.0) | 10.0 (9.0 11.0) | 0.909 | 1.000 |") in out
    assert "| add |" not in out  # no liger row in a1, a2, b1
    assert "liger / ours" in out.splitlines()[0]
    assert subprocess.run([*tool, "--peer"], capture_output=True).returncode != 0


def test_targets_counts(tmp_path):
    """tools/targets.py counts issue 4's targets over our rows only: 0.995 counts as level, the
    64 MB and 16 MB bounds are inclusive, a fused row at its bytes ratio meets it."""

    p = tmp_path / "sweep.csv"
    p.write_text(
        "op,shape,dtype,impl,us,GBps,copy_share,MB,vs_best_peer,vs_unfused,bytes_ratio\n"
        "a,s,bf16,ltx,1,1,0.95,64,0.995,,\n"
        "b,s,bf16,ltx,1,1,0.89,200,0.99,2.0,2.0\n"
        "c,s,bf16,ltx,1,1,0.10,16,1.3,1.9,2.0\n"
        "c,s,bf16,compile,1,1,0.10,16,,,\n")
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "targets.py"), str(p)],
                         capture_output=True, text=True, check=True).stdout
    assert "level or ahead of the best peer: 2 of 3" in out
    assert ">= 90% of the copy from 64 MB: 1 of 2" in out
    assert ">= 1.3x the best peer to 16 MB: 1 of 1" in out
    assert "fused: >= the bytes ratio: 1 of 2" in out
    # --help prints the usage and succeeds; no CSV is an error (it used to open "--help")
    tool = [sys.executable, str(ROOT / "tools" / "targets.py")]
    helped = subprocess.run([*tool, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "python tools/targets.py" in helped.stdout
    assert subprocess.run(tool, capture_output=True).returncode != 0


def test_summary_table_rows(tmp_path):
    """tools/summary_table.py: ours in bold where the best peer's time over ours is 0.995 or
    more (targets.py's level), the best peer never ours, the unfused sequence or a reference;
    one column group a CSV; --behind lists the trailing cases, slowest first; a case missing
    from a CSV, or a CSV of two dtypes, is an error."""

    head = "op,shape,dtype,impl,us,GBps,copy_share,MB,vs_best_peer,vs_unfused,bytes_ratio\n"

    def write(name, dtype, rows):
        p = tmp_path / name
        p.write_text(head + "".join(f"{r[0]},{r[1]},{dtype},{r[2]},{r[3]},1,{r[4]},44.0,,,\n"
                                    for r in rows))
        return p

    bf = write("bf.csv", "bf16", [
        ("a", "1x2", "ltx", 10.0, 0.5), ("a", "1x2", "liger", 9.96, 0.5),
        ("a", "1x2", "compile", 12.0, 0.4), ("a", "1x2", "unfused", 5.0, 0.9),
        ("b", "3x4", "ltx", 10.0, 0.6), ("b", "3x4", "compile", 9.0, 0.7),
        ("b", "3x4", "floor", 4.0, 0.1)])
    fp = write("fp.csv", "fp16", [
        ("a", "1x2", "ltx", 8.0, 0.6), ("a", "1x2", "compile", 10.0, 0.5),
        ("b", "3x4", "ltx", 9.0, 0.6), ("b", "3x4", "eager", 20.0, 0.3)])
    tool = [sys.executable, str(ROOT / "tools" / "summary_table.py")]

    def run(*args, ok=True):
        r = subprocess.run([*tool, *map(str, args)], capture_output=True, text=True)
        assert (r.returncode == 0) == ok, r.stderr
        return r.stdout.splitlines() if ok else r.stderr

    out = run(bf, fp, "--rows", "a:1x2,b:3x4")
    assert out[0] == ("| op | shape | MB | bf16: ours | best peer | ours / best | fp16: ours | "
                      "best peer | ours / best |")
    assert out[2] == ("| a | 1x2 | 44.0 | **10.0 us (50%)** | liger 10.0 | 1.00x | "
                      "**8.0 us (60%)** | compile 10.0 | 1.25x |")
    assert out[3] == ("| b | 3x4 | 44.0 | 10.0 us (60%) | compile 9.0 | 0.90x | "
                      "**9.0 us (60%)** | eager 20.0 | 2.22x |")
    assert run(bf, "--card", "--rows", "a:1x2")[2] == "| a | 1x2 | 10.0 us (50%) | - | 12.0 | 10.0 |"
    assert run(bf, "--behind") == ["bf16: 1 of 2 cases behind the best peer",
                                   "b 3x4: 0.90x compile (10.0 against 9.0 us)"]
    assert "no case c:1x1" in run(bf, "--rows", "c:1x1", ok=False)
    both = tmp_path / "both.csv"
    both.write_text(bf.read_text() + fp.read_text().split("\n", 1)[1])
    assert "one dtype a CSV" in run(both, ok=False)


def test_sweep_select_cases_by_shape():
    """--shapes keeps only the named cases of the chosen ops, in the table's order, for every
    dtype; a shape that is none of their cases is an error that lists theirs."""
    import sweep

    full = sweep.select_cases(["rms_norm", "adaln"], ["bf16", "fp16"], quick=False)
    assert len(full) == 2 * (len(sweep.TABLE["rms_norm"][1]) + len(sweep.TABLE["adaln"][1]))
    picked = sweep.select_cases(["rms_norm", "adaln"], ["bf16", "fp16"], quick=False,
                                shapes="2x2688x2048, 1x1024x4096")
    assert picked == [c for c in full if c[1] in ((2, 2688, 2048), (1, 1024, 4096))]
    assert [(op, dt) for op, _, dt in picked] == [
        ("rms_norm", "bf16"), ("rms_norm", "bf16"), ("rms_norm", "fp16"), ("rms_norm", "fp16"),
        ("adaln", "bf16"), ("adaln", "fp16")]
    with pytest.raises(ValueError, match="1x1024x4096"):
        sweep.select_cases(["adaln"], ["bf16"], quick=False, shapes="1x1024x4096")
    with pytest.raises(ValueError, match="quick"):  # a full-table shape that --quick leaves out
        sweep.select_cases(["rms_norm"], ["bf16"], quick=True, shapes="2x2688x2048")


def test_sweep_best_peer_leaves_out_references():
    """Ours, the copy, stream and floor references and the unfused sequence are never the best
    peer."""
    import math

    import sweep

    times = {"ltx": 1.0, "floor": 0.5, "copy": 0.7, "stream": 0.8, "unfused": 0.9, "eager": 3.0,
             "liger": 2.0}
    assert sweep.best_peer_time(times) == 2.0
    assert math.isnan(sweep.best_peer_time({"ltx": 1.0, "floor": 0.5}))


def test_peer_sweeps_logs_each_tables_rows(tmp_path):
    """tools/gpu_prebuilt.sh: peer_sweeps OPS DIR LIMIT DTYPE... runs one sweep a dtype with
    every peer into DIR/peers-DTYPE and copies that table's rows, not just its header, to $LOG."""

    stub = """#!/bin/bash
out=$(echo "$@" | sed 's/.*--out \\([^ ]*\\).*/\\1/'); mkdir -p "$out"
dt=$(echo "$@" | sed 's/.*--dtypes \\([^ ]*\\).*/\\1/'); echo "$@" >> calls
printf 'note\\n\\n| op | shape | dtype | MB | ltx | speedup |\\n|---|\\n' > "$out/sweep.md"
printf '| geglu | 2x8x16 | %s | 0.1 | 5.0 (1%%) | 6.0 (1%%) | 1.20x |\\n' "$dt" >> "$out/sweep.md"
"""
    log = tmp_path / "run.log"
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && LOG={log} && "
              f"peer_sweeps geglu,silu_and_mul {tmp_path}/w 30 bf16 fp16")
    r = bash_with_stub(tmp_path, script, stub)
    assert r.returncode == 0, r.stdout + r.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert [c.split("--dtypes ")[1].split()[0] for c in calls] == ["bf16", "fp16"]
    assert all("--ops geglu,silu_and_mul" in c for c in calls)
    text = log.read_text()
    assert "| geglu | 2x8x16 | bf16 | 0.1 | 5.0 (1%) | 6.0 (1%) | 1.20x |" in text
    assert "| geglu | 2x8x16 | fp16 |" in text
    assert "| op | shape |" not in text


def test_llama_e2e_logs_rounds_and_speedups(tmp_path):
    """tools/gpu_prebuilt.sh: llama_e2e LIMIT runs the LLaMA benchmark with every configuration
    into $OUT/llama.{log,json} and copies its rounds and speedups, not its other lines, to
    $LOG."""
    stub = """#!/bin/bash
echo "$@" >> calls
echo "loading model"
echo "  round 1/3: eager 122.0, compile 101.7 ms (median)"
echo "  kernels+compile against compile: 1.007x"
"""
    out, text = prebuilt_call(tmp_path, "llama_e2e 30", stub)
    call = (tmp_path / "calls").read_text()
    assert "scripts/benchmark_transformers.py --seq-len 4096" in call
    assert "--configs eager,kernels,compile,kernels+compile" in call
    assert f"--json {out}/llama.json" in call
    assert "LLaMA-8B prefill: every configuration" in text and "rc 0" in text
    assert "round 1/3: eager 122.0" in text and "against compile: 1.007x" in text
    assert "loading model" not in text and "loading model" in (out / "llama.log").read_text()


def test_gemm_probe_logs_matching_rows(tmp_path):
    """tools/gpu_prebuilt.sh: gemm_probe LIMIT NAME LINES runs the probe's LLaMA cases into
    $OUT/NAME.json and copies its header and the rows LINES matches, no others, to $LOG."""
    stub = """#!/bin/bash
echo "$@" >> calls
echo "# NVIDIA H100 torch 2.11"
echo "| llama q 4096x4096->4096 | 177.6 | 1 | nvjet |"
echo "| linear qkv 5376x2048->6144 | 181.4 | 1 | nvjet |"
echo "| linear ff up 5376x2048->8192 | 255.6 | 1 | nvjet |"
"""
    out, text = prebuilt_call(tmp_path, "gemm_probe 30 p1 'llama|linear qkv'", stub)
    call = (tmp_path / "calls").read_text()
    assert "tools/gemm_attention_probe.py --only l" in call and f"--json {out}/p1.json" in call
    assert "# NVIDIA H100" in text and "llama q 4096x4096" in text and "linear qkv" in text
    assert "linear ff up" not in text


def test_run_tests_logs_summary_and_junit(tmp_path):
    """tools/gpu_prebuilt.sh: run_tests NAME LIMIT ARGS... runs pytest quietly with a JUnit XML
    beside its log in $OUT (the names of the tests a cut run reached), copies the failures and
    the summary, not the rest, to $LOG, and ends what the run left behind, and only that."""
    stub = """#!/bin/bash
echo "$@" >> calls
sleep 60 > /dev/null 2>&1 &
echo $! > straggler
echo "....F"
echo "FAILED tests/test_x.py::test_b - AssertionError"
echo "1 failed, 4 passed in 1.00s"
"""
    out, text = prebuilt_call(tmp_path, "run_tests t1 30 -n 4 -k cuda tests/test_x.py", stub)
    call = (tmp_path / "calls").read_text()
    assert call.startswith("-m pytest -q -p no:cacheprovider -rf")
    assert f"--junitxml={out}/t1.xml -n 4 -k cuda tests/test_x.py" in call
    assert "FAILED tests/test_x.py::test_b" in text and "1 failed, 4 passed" in text
    assert "....F" not in text and "....F" in (out / "t1.log").read_text()
    # what pytest left running (a child of its process group) was ended
    straggler = Path(f"/proc/{(tmp_path / 'straggler').read_text().strip()}/status")
    assert not straggler.exists() or "State:\tZ" in straggler.read_text()


def test_full_table_and_ltx_time(tmp_path):
    """tools/gpu_prebuilt.sh: full_table DTYPE LIMIT runs the full sweep of one dtype in
    shuffled rounds with --monitor into $W/full-DTYPE, logs the case count and the target
    counts, and packs the table; ltx_time CONFIG LIMIT runs one LTX configuration with flags
    benchmark_example.py has (compile alone: --no-use-optimized-kernels), its times to $LOG;
    an unknown configuration is an error."""
    import tarfile

    sys.path.insert(0, str(ROOT / "scripts"))
    import benchmark_example

    stub = """#!/bin/bash
echo "$@" >> calls
case "$1" in
  benchmarks/sweep.py) out=${@: -1}; mkdir -p "$out"
    printf 'op,shape,dtype,impl,us,GBps,copy_share,MB,vs_best_peer,vs_unfused,bytes_ratio\\n' > "$out/sweep.csv"
    touch "$out/sweep.png"; echo "[1/1] rms_norm 1x8x64 fp16" ;;
  tools/targets.py) echo "  level or ahead of the best peer: 1 of 1" ;;
  scripts/benchmark_example.py) echo "  compile   43.12 ms/step (median)"; echo "noise" ;;
esac
"""
    out, log, w = tmp_path / "out", tmp_path / "run.log", tmp_path / "w"
    out.mkdir()
    w.mkdir()
    script = (f"source {ROOT}/tools/gpu_prebuilt.sh && OUT={out} && LOG={log} && W={w} && "
              "full_table fp16 30 && LTX_E2E_ARGS=--freeze ltx_time compile 30 && "
              "LTX_TAG=2 ltx_time kernels+compile 30 && ltx_time eager 30")
    r = bash_with_stub(tmp_path, script, stub)
    assert r.returncode == 2 and "unknown configuration eager" in r.stderr, r.stdout + r.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0] == (f"benchmarks/sweep.py --dtypes fp16 --rounds 3 --order shuffle --monitor "
                        f"--out {w}/full-fp16")
    assert calls[1] == f"tools/targets.py {w}/full-fp16/sweep.csv"
    compile_args = calls[2].split()[1:]
    assert "--freeze" in compile_args and f"{out}/ltx-compile.json" in compile_args
    kc_args = calls[3].split()[1:]
    assert f"{out}/ltx-kernels+compile-2.json" in kc_args and "--freeze" not in kc_args
    for args in (compile_args, kc_args):  # flags the script has
        benchmark_example.parse_args(args)
    assert not benchmark_example.parse_args(compile_args).use_optimized_kernels
    assert benchmark_example.parse_args(compile_args).compile
    assert benchmark_example.parse_args(kc_args).use_optimized_kernels
    text = log.read_text()
    assert "rc 0 (1 cases)" in text and "level or ahead of the best peer: 1 of 1" in text
    assert text.count("43.12 ms/step") == 2 and "noise" not in text
    with tarfile.open(out / "sweeps-fp16.tar.gz") as t:
        assert "full-fp16/sweep.csv" in t.getnames()


def test_sweep_rounds_shuffled_order(monkeypatch, tmp_path):
    """--order shuffle: each round times every implementation once, in an order drawn from a
    generator seeded by the case and the round (the same on a rerun, different across rounds
    and cases), so that no implementation keeps one predecessor; the table's header says so.
    It is the default (run DD's tables); the alternating order stays available."""
    import sweep

    names = ["ltx", "eager", "F.rms_norm", "compile", "liger"]
    orders = [sweep.round_order(names, "rms_norm 2x2688x2048 bf16", r, "shuffle")
              for r in range(6)]
    assert all(sorted(o) == sorted(names) for o in orders)
    assert len({tuple(o) for o in orders}) > 1, "every round in one order"
    before = {o[o.index("liger") - 1] for o in orders if o.index("liger") > 0}
    assert len(before) > 1, "liger always after the same implementation"
    assert orders == [sweep.round_order(names, "rms_norm 2x2688x2048 bf16", r, "shuffle")
                      for r in range(6)], "not reproducible"
    assert orders[0] != sweep.round_order(names, "rms_norm 1x4096x4096 bf16", 0, "shuffle") or \
        orders[1] != sweep.round_order(names, "rms_norm 1x4096x4096 bf16", 1, "shuffle")
    assert sweep.round_order(names, "x", 1, "alternate") == names[::-1]
    assert sweep.ORDER == "shuffle"  # the default since run DD's tables

    calls = []

    def fake_bench(fn, graph=True):
        calls.append(fn())
        return 1.0

    monkeypatch.setattr(sweep, "bench", fake_bench)
    fns = {n: (lambda n=n: n) for n in names}
    got = sweep.time_impls(fns, "rms_norm 2x2688x2048 bf16", True, rounds=6, order="shuffle")
    assert calls == [n for o in orders for n in o]
    # the result (the table's columns, the CSV's rows) in the implementations' own order
    assert list(got) == names and orders[0] != names
    row = dict(op="rms_norm", shape="1x8x64", dtype="bf16", impl="ltx", us=2.0, GBps=1.0,
               copy_share=0.1, MB=1.0, vs_best_peer="")
    meta = dict(gpu="g", torch="t", date="d", copy_GBps=4000.0, rounds=6, order="shuffle")
    sweep.write_outputs([row], tmp_path, meta, plot=False)
    assert "each the median of 6 rounds in shuffled order" in (tmp_path / "sweep.md").read_text()


def test_sweep_rounds_alternate_order(monkeypatch, tmp_path):
    """--rounds N: each case's implementations timed N times, the table's order then its
    reverse, each keeping the median of its rounds; one that fails is tried once; the table's
    header says so."""
    import sweep

    calls, t = [], {"ltx": iter([1.0, 5.0, 2.0]), "liger": iter([4.0, 1.0, 3.0])}

    def fake_bench(fn, graph=True):
        name = fn()
        calls.append(name)
        if name == "broken":
            raise RuntimeError("no kernel image")
        return next(t[name])

    monkeypatch.setattr(sweep, "bench", fake_bench)
    fns = {"ltx": lambda: "ltx", "broken": lambda: "broken", "liger": lambda: "liger"}
    times = sweep.time_impls(fns, "rms_norm 1x8x64 bf16", True, rounds=3, order="alternate")
    assert calls == ["ltx", "broken", "liger", "liger", "ltx", "ltx", "liger"]
    assert times == {"ltx": 2.0, "liger": 3.0}
    row = dict(op="rms_norm", shape="1x8x64", dtype="bf16", impl="ltx", us=2.0, GBps=1.0,
               copy_share=0.1, MB=1.0, vs_best_peer="")
    meta = dict(gpu="g", torch="t", date="d", copy_GBps=4000.0, rounds=3, order="alternate")
    sweep.write_outputs([row], tmp_path, meta, plot=False)
    assert "each the median of 3 rounds in alternating order" in (tmp_path / "sweep.md").read_text()
