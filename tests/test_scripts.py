"""The scripts in scripts/ run end to end with tiny settings (subprocesses, as users run them):
the LTX-Video and LLaMA benchmarks write sane JSON, the injection examples match the
uninjected models, and the Hub example explains what to do when the Hub cannot be reached."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HAS_CUDA, REPO_ID, ROOT, restore_transformers_kernel_funcs

SCRIPTS = ROOT / "scripts"
pytest.importorskip("diffusers")


def run_script(name, *args, env=None, check=True, timeout=600):
    env = {**os.environ, **(env or {})}
    p = subprocess.run([sys.executable, str(SCRIPTS / name), *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{name} exited {p.returncode}\n{p.stdout}\n{p.stderr[-4000:]}")
    return p


@pytest.mark.parametrize("name", ["benchmark_example.py", "benchmark_transformers.py",
                                  "ltx_kernel_injection_example.py",
                                  "transformers_injection_example.py",
                                  "huggingface_kernels_example.py", "plot_e2e.py"])
def test_help(name):
    assert "usage:" in run_script(name, "--help").stdout


TINY_LTX = ["--model-size", "tiny", "--dtype", "fp32", "--num-frames", "9", "--height", "64",
            "--width", "96", "--steps", "2", "--warmup-iterations", "1", "--no-progress"]


@pytest.mark.kernels_ci
def test_benchmark_example_tiny(backend, tmp_path):
    out = tmp_path / "ltx.json"
    p = run_script("benchmark_example.py", *TINY_LTX, "--device", backend, "--cfg", "--compare",
                   "--profile", "--profile-loop", "2", "--sync-debug", "--json", out)
    data = json.loads(out.read_text())
    assert data["latent"] == [2, 2, 3] and data["tokens"] == 12 and data["transformer_batch"] == 2
    eager, kernels = data["results"]
    assert (eager["config"], kernels["config"]) == ("eager", "kernels")
    for r in (eager, kernels):
        assert len(r["ms_per_step"]) == 2 and r["ms_per_step_median"] > 0
        assert r["ms_per_step_loop"] > 0
        assert r["speedup_vs_eager"] > 0 and r["speedup_vs_eager_loop"] > 0
        assert "gpu_state" in r  # None on the CPU
        # where a step makes the host wait for the device: None off CUDA, else a (maybe empty)
        # list of frames
        assert (r["sync_point"] is None) == (backend == "cpu")
    assert eager["injection"] is None and sum(kernels["injection"].values()) == 11
    assert eager["rel_err_vs_eager"] == 0 and 0 < kernels["rel_err_vs_eager"] < 1e-4
    assert "ours" in kernels["profile"]["categories_ms"]
    assert kernels["profile"]["top_per_category"]["ours"][0]["ms"] > 0
    assert "ours" not in eager["profile"]["categories_ms"]
    # two steps of the loop profiled, our ops among them (their times are not compared with
    # the one-step profile's: on the CPU a first step can cost as much as two later ones)
    loop = kernels["profile_loop"]
    assert loop["steps"] == 2 and (loop["timeline"] is None) == (backend == "cpu")
    assert loop["categories_ms"]["ours"] > 0 and "ours" not in eager["profile_loop"][
        "categories_ms"]
    assert "steps of the loop" in p.stdout
    assert "speedup against eager" in p.stdout and "it/s" in p.stdout
    assert "sync debug: " in p.stdout


@pytest.mark.slow
def test_benchmark_example_kernels_compile(backend, tmp_path):
    """--compile with --use-optimized-kernels (the fastest configuration) runs, whole model
    and per block, against a baseline JSON for the speedup; and with the weights frozen into
    the graph (--freeze), its prediction still eager's; also with CUDA graphs and no guards on
    the modules (--skip-module-guards: the mode passed as options)."""
    base = tmp_path / "eager.json"
    run_script("benchmark_example.py", *TINY_LTX, "--device", backend,
               "--no-use-optimized-kernels", "--json", base)
    fastest = ["--freeze", "--compile-mode", "reduce-overhead", "--skip-module-guards",
               "--compare"]
    for scope, extra in (("model", []), ("blocks", []), ("model", ["--freeze", "--compare"]),
                         ("model", fastest)):
        out = tmp_path / f"{scope}.json"
        run_script("benchmark_example.py", *TINY_LTX, "--device", backend, "--compile",
                   "--compile-scope", scope, "--baseline-json", base, "--json", out, *extra)
        data = json.loads(out.read_text())
        r = data["results"][-1]
        assert r["config"] == "kernels+compile" and r["speedup_vs_eager"] > 0
        assert r["speedup_vs_eager_loop"] > 0  # the baseline JSON has the loop time too
        assert data["freeze"] == ("--freeze" in extra)
        assert data["skip_module_guards"] == ("--skip-module-guards" in extra)
        if extra:
            assert 0 < r["rel_err_vs_eager"] < 1e-4


def test_plot_e2e(tmp_path):
    """The end-to-end plot: each bar is the profiled step's device time by segment plus the
    uncovered rest of the median step (never negative; the step alone without a profile); a
    merged file's run and configuration are picked by name, tags label the bars."""
    plot = script_module("plot_e2e")
    prof = {"categories_ms": {"gemm": 20.0, "attention": 8.0, "ours": 3.0, "copy": 0.5,
                              "inductor elementwise / reduction": 1.0}}
    r = {"config": "kernels+compile", "ms_per_step_median": 40.0, "ms_per_step_loop": 39.0,
         "profile": prof}
    parts = plot.bar_parts(r)
    assert parts == {"matrix products": 20.0, "attention": 8.0, "this package": 3.0,
                     "other kernels": 1.5, "host / gaps": pytest.approx(7.5)}
    assert plot.bar_parts(dict(r, ms_per_step_median=30.0))["host / gaps"] == 0.0
    bare = {"config": "eager", "ms_per_step_median": 60.0, "ms_per_step_loop": 59.0}
    assert plot.bar_parts(bare)["host / gaps"] == 60.0
    # --profile loop: the loop's profiled steps divided by their count; the one step without them
    looped = dict(r, profile_loop={"steps": 2, "categories_ms": {
        "gemm": 38.0, "attention": 16.0, "ours": 5.0, "other elementwise / reduction": 1.0}})
    assert plot.bar_parts(looped, "loop") == {
        "matrix products": 19.0, "attention": 8.0, "this package": 2.5, "other kernels": 0.5,
        "host / gaps": pytest.approx(10.0)}
    assert plot.bar_parts(looped) == parts
    assert plot.bar_parts(r, "loop") == parts
    assert plot.bar_parts(bare, "loop")["host / gaps"] == 60.0
    merged = tmp_path / "e2e.json"
    merged.write_text(json.dumps({
        "ltx2b": {"freeze": False, "compile_mode": None, "results": [bare, r]},
        "best": {"freeze": True, "compile_mode": "reduce-overhead", "gelu_in_matmul": True,
                 "fuse_projections": True, "results": [r]}}))
    got = plot.load(f"{merged}:best@run N")
    assert [label for label, _ in got] == [
        "kernels+compile (freeze, CUDA graphs, GELU in matmul, fused q/k/v) [run N]"]
    assert [label for label, _ in plot.load(f"{merged}:ltx2b:eager")] == ["eager"]
    with pytest.raises(SystemExit):
        plot.load(f"{merged}:nope")
    pytest.importorskip("matplotlib")
    out = tmp_path / "e2e.png"
    run_script("plot_e2e.py", merged, "--target", "40", "--out", out)
    assert out.stat().st_size > 10_000
    out_loop = tmp_path / "e2e-loop.png"
    run_script("plot_e2e.py", merged, "--profile", "loop", "--out", out_loop)
    assert out_loop.stat().st_size > 10_000


def test_benchmark_example_cublaslt_workspace(backend, tmp_path):
    """--cublaslt-workspace-kib reaches PyTorch as CUBLASLT_WORKSPACE_SIZE before the first
    matrix product (the child's environment: what it prints and records is what it set), for
    every configuration of the run; a negative size is refused."""
    out = tmp_path / "ws.json"
    env = {k: v for k, v in os.environ.items() if k != "CUBLASLT_WORKSPACE_SIZE"}
    p = subprocess.run([sys.executable, str(SCRIPTS / "benchmark_example.py"), *TINY_LTX,
                        "--steps", "1", "--device", backend, "--compare",
                        "--cublaslt-workspace-kib", "0", "--json", str(out)],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    data = json.loads(out.read_text())
    assert data["cublaslt_workspace_kib"] == "0"
    assert [r["config"] for r in data["results"]] == ["eager", "kernels"]
    assert "cuBLASLt workspace 0 KiB" in p.stdout
    bad = run_script("benchmark_example.py", "--cublaslt-workspace-kib", "-1", check=False)
    assert bad.returncode != 0 and "must be >= 0" in bad.stderr


def test_benchmark_example_rejects_bad_frames():
    p = run_script("benchmark_example.py", "--num-frames", "50", check=False)
    assert p.returncode != 0 and "8k + 1" in p.stderr


@pytest.mark.parametrize("extra, message", [
    (["--device", "cpu"], "needs a CUDA device"),
    (["--device", "cuda", "--compile", "--compile-mode", "reduce-overhead"],
     "cannot be captured inside it"),
])
def test_benchmark_example_cuda_graph_rejected(extra, message):
    """--cuda-graph off CUDA, or with inductor's own CUDA graphs, is refused before any
    model is built (argument checks only: runs on a CPU-only machine)."""
    p = run_script("benchmark_example.py", "--cuda-graph", *extra, check=False)
    assert p.returncode != 0 and message in p.stderr


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")
@pytest.mark.parametrize("extra", [["--compare"], ["--compile", "--freeze", "--compare"]],
                         ids=["eager-kernels", "kernels-compile"])
def test_benchmark_example_cuda_graph(tmp_path, extra):
    """--cuda-graph: each configuration's transformer call captured once and replayed; the
    prediction (taken through the graph) still eager's, our kernels inside the graph in the
    profile, and the timings and loop profile present."""
    out = tmp_path / "graph.json"
    run_script("benchmark_example.py", *TINY_LTX, "--device", "cuda", "--cfg", "--cuda-graph",
               "--profile", "--profile-loop", "2", "--json", out, *extra)
    data = json.loads(out.read_text())
    assert data["cuda_graph"] is True
    eager, ours = data["results"]
    assert eager["config"] == "eager"
    assert ours["config"] == ("kernels+compile" if "--compile" in extra else "kernels")
    assert eager["rel_err_vs_eager"] == 0 and 0 < ours["rel_err_vs_eager"] < 1e-4
    for r in (eager, ours):
        assert len(r["ms_per_step"]) == 2 and r["ms_per_step_loop"] > 0
    assert ours["profile"]["categories_ms"]["ours"] > 0
    assert ours["profile_loop"]["categories_ms"]["ours"] > 0


@pytest.mark.kernels_ci
def test_benchmark_transformers_tiny(backend, tmp_path):
    out = tmp_path / "llama.json"
    run_script("benchmark_transformers.py", "--model-size", "tiny", "--device", backend,
               "--dtype", "fp32", "--seq-len", "16", "--iterations", "2",
               "--warmup-iterations", "1", "--configs", "eager,kernels,kernels+proj,kernels+qkv",
               "--no-progress", "--json", out)
    data = json.loads(out.read_text())
    assert [r["config"] for r in data["results"]] == ["eager", "kernels", "kernels+proj",
                                                     "kernels+qkv"]
    linears = {r["config"]: r["linears"] for r in data["results"]}
    layers = (linears["eager"] - 1) // 7  # q, k, v, o, gate, up, down a layer, and lm_head
    assert linears["eager"] == linears["kernels"] == 7 * layers + 1 and layers > 0
    assert linears["kernels+qkv"] == 5 * layers + 1  # qkv_proj, o; gate, up, down
    assert linears["kernels+proj"] == 4 * layers + 1  # qkv_proj, o; gate_up_proj, down
    assert all(r["tokens_per_s"] > 0 for r in data["results"])
    assert all("gpu_state" in r for r in data["results"])  # None on the CPU
    # fp32: eager is the reference itself; the kernels differ in summation order only
    assert data["results"][0]["rel_err_vs_fp32"] == 0
    assert all(0 < r["rel_err_vs_fp32"] < 1e-4 for r in data["results"][1:])


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["layers", "model"])
def test_benchmark_transformers_compile(backend, tmp_path, scope):
    """Both compile scopes run the compiled configurations (kernels+compile with the residual
    adds and the MLP's SiLU and product fused, and without), and their logits agree with the fp32 reference as
    closely as the script demands (it exits non-zero otherwise)."""
    out = tmp_path / "llama.json"
    run_script("benchmark_transformers.py", "--model-size", "tiny", "--device", backend,
               "--dtype", "fp32", "--seq-len", "16", "--iterations", "1",
               "--warmup-iterations", "1", "--configs",
               "compile,kernels+compile,kernels+compile-unfused", "--compile-scope", scope,
               "--no-progress", "--json", out)
    data = json.loads(out.read_text())
    assert data["compile_scope"] == scope and data["fuse"]
    assert [r["config"] for r in data["results"]] == ["compile", "kernels+compile",
                                                      "kernels+compile-unfused"]
    assert all(r["rel_err_vs_fp32"] < 1e-4 for r in data["results"])


def test_benchmark_example_fuse_projections(backend, tmp_path):
    """--fuse-projections: the kernels configuration with diffusers' fused q / k / v (reported
    in the injection: both attentions of each of the tiny model's 2 blocks) and eager's
    prediction."""
    out = tmp_path / "ltx.json"
    run_script("benchmark_example.py", *TINY_LTX, "--device", backend, "--compare",
               "--fuse-projections", "--json", out)
    data = json.loads(out.read_text())
    assert data["fuse_projections"]
    eager, kernels = data["results"]
    qkv = [n for kind, n in kernels["injection"].items() if "q/k/v projections" in kind]
    assert qkv == [4]
    assert 0 < kernels["rel_err_vs_eager"] < 1e-4


def test_benchmark_transformers_rounds(backend, tmp_path):
    """--rounds: every configuration built first, then timed in alternating rounds. kernelize
    sets the rope function layer for the whole process, so the script switches it to each
    configuration's own before its forwards: the profiles of eager and compile (built before
    any kernelize, timed after) show none of this package's kernels (the script exits non-zero
    if they do), and every configuration matches the fp32 reference."""
    out = tmp_path / "llama.json"
    p = run_script("benchmark_transformers.py", "--model-size", "tiny", "--device", backend,
                   "--dtype", "fp32", "--seq-len", "16", "--iterations", "1",
                   "--warmup-iterations", "1", "--rounds", "2", "--profile", "--no-progress",
                   "--json", out)
    data = json.loads(out.read_text())
    assert data["rounds"] == 2
    results = {r["config"]: r for r in data["results"]}
    assert list(results) == ["eager", "compile", "kernels", "kernels+compile"]
    for r in results.values():
        assert len(r["round_medians_ms"]) == 2 and len(r["ms"]) == 2
        assert r["rel_err_vs_fp32"] < 1e-4
    for config in ("eager", "compile"):
        assert "ours" not in results[config]["profile"]["categories_ms"]
    for config in ("kernels", "kernels+compile"):
        assert "ours" in results[config]["profile"]["categories_ms"]
    assert "round 2/2:" in p.stdout and "per round:" in p.stdout


def test_ltx_kernel_injection_example(backend):
    p = run_script("ltx_kernel_injection_example.py", "--device", backend, "--per-token-timesteps")
    assert "11 replacements" in p.stdout
    rel = float(p.stdout.rsplit("relative", 1)[1].split()[0])
    assert rel < 1e-5


def test_transformers_injection_example(backend):
    p = run_script("transformers_injection_example.py", "--device", backend)
    assert "kernelize: logits relative difference" in p.stdout
    calls = "kernel calls per forward {'rms_norm': 5, 'rope_qk': 2, 'silu': 2}"
    assert "Falcon: 5 LayerNorms patched" in p.stdout
    if backend == "cpu":  # transformers 5.22's KernelConfig knows no cpu device
        assert "not supported on cpu" in p.stdout
        assert p.stdout.count(calls) == 1
    else:  # kernelize, then the KernelConfig path (from_pretrained or set_use_kernels)
        assert p.stdout.count(calls) == 2, p.stdout


def test_transformers_kernel_config_path(monkeypatch, capsys):
    """The example's KernelConfig path on the CPU, with "cpu" added to transformers' device list
    (5.22.2 lists none): the local mapping attaches every layer, and each kernel runs."""
    import argparse
    import importlib

    import torch
    import transformers.utils.kernel_config as kc

    monkeypatch.setattr(kc, "KERNELS_SUPPORTED_DEVICE_TYPES",
                        [*kc.KERNELS_SUPPORTED_DEVICE_TYPES, "cpu"])
    monkeypatch.syspath_prepend(str(SCRIPTS))
    example = importlib.import_module("transformers_injection_example")
    try:
        args = argparse.Namespace(device="cpu", dtype="fp32")
        ids = torch.randint(0, 512, (2, 16))
        model = example.with_from_pretrained(example.load_kernel("cpu"), args, torch.float32,
                                             ids)
    finally:  # kernelize replaced the process-wide apply_rotary_pos_emb's forward
        restore_transformers_kernel_funcs()
    assert model is not None
    assert ("kernel calls per forward {'rms_norm': 5, 'rope_qk': 2, 'silu': 2}"
            in capsys.readouterr().out)


def script_module(name: str):
    """scripts/<name>.py as a module (scripts/ on sys.path only while it is imported)."""
    import importlib

    sys.path.insert(0, str(SCRIPTS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(SCRIPTS))


def _common():
    return script_module("_common")


def test_benchmark_transformers_version_warning(tmp_path):
    """benchmark_transformers.py names the installed transformers and warns when it is not the
    version requirements.txt pins (run EE's H200 ran its own transformers, where kernelize did
    not map the rotary embedding: the kernels configuration 8% slower, no error)."""
    bt = script_module("benchmark_transformers")
    assert bt.pinned_version("transformers")  # requirements.txt pins one (5.22.2 today)
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nkernels==0.17.2  # the Hub loader\neinops\nTransformers==5.22.2\n")
    assert bt.pinned_version("kernels", req) == "0.17.2"
    assert bt.pinned_version("transformers", req) == "5.22.2"
    assert bt.pinned_version("einops", req) is None
    assert bt.pinned_version("kernels", tmp_path / "missing.txt") is None
    assert bt.version_warning("transformers", "5.22.2", "5.22.2") is None
    assert bt.version_warning("transformers", "5.17.0", None) is None
    w = bt.version_warning("transformers", "5.17.0", "5.22.2")
    assert w.startswith("warning: transformers 5.17.0 is not the version this project pins (5.22.2")


def test_gpu_monitor_parse():
    """nvidia-smi's CSV samples: unparsable ones ("[N/A]", a line cut at termination) are
    skipped; min / median / max per field."""
    parse = _common().GpuMonitor.parse
    got = parse(["1980, 40, 300.5\n", "[N/A], 41, 310\n", "1755, 60, 650.0\n",
                 "1830, 50, 500\n", "19"])
    assert got == {"samples": 3,
                   "sm_mhz": {"min": 1755.0, "median": 1830.0, "max": 1980.0},
                   "temp_c": {"min": 40.0, "median": 50.0, "max": 60.0},
                   "power_w": {"min": 300.5, "median": 500.0, "max": 650.0}}
    assert parse([]) is None and parse(["[N/A], [N/A], [N/A]"]) is None
    # with the clock event reasons' mask: samples per active reason
    got = parse(["1755, 60, 650.0, 0x0000000000000004\n", "1980, 40, 300.5, 0x0000000000000000\n",
                 "1710, 61, 690.0, 0x0000000000000084\n", "1700, 6"])
    assert got["samples"] == 3 and got["sm_mhz"]["min"] == 1710.0
    assert got["clock_reasons"] == {"software power cap": 2, "hardware power brake": 1}
    assert "clock held by (samples): software power cap 2" in _common().GpuMonitor.describe(got)


def test_gpu_monitor_smi_index():
    """Which nvidia-smi index to sample: the one whose UUID matches torch's (with or without
    the "GPU-" prefix), else the only one, else none."""
    smi_index = _common().GpuMonitor.smi_index
    two = "0, GPU-aaaa-1111\n1, GPU-bbbb-2222\n"
    assert smi_index(two, "bbbb-2222") == "1"
    assert smi_index(two, "GPU-aaaa-1111") == "0"
    assert smi_index(two, "cccc") is None and smi_index(two, None) is None
    assert smi_index("0, GPU-aaaa-1111\n", "cccc") == "0"
    assert smi_index("", "aaaa") is None


def test_timeline():
    """The profile's timeline on hand-made events (us): busy time is the union of the device
    events; a gap is host-bound only when the next event's API call began after the device
    drained; kernels of one graph launch share its call and its host cost; each memset is
    listed by the device event before it."""
    from types import SimpleNamespace as NS

    from torch.autograd import DeviceType

    def ev(name, start, end, cid, dev=True):
        return NS(name=name, id=cid, time_range=NS(start=start, end=end),
                  device_type=DeviceType.CUDA if dev else DeviceType.CPU)

    events = [
        ev("cudaLaunchKernel", 0, 5, 1, dev=False), ev("void ltx::rms_norm_kernel", 10, 20, 1),
        # launched while the first ran: the 2 us gap is latency, not the host's
        ev("cuLaunchKernel", 8, 12, 2, dev=False), ev("triton_poi_fused_add_0", 22, 30, 2),
        # the host called only at 40, after the device drained at 30: 15 us host-bound
        ev("cudaLaunchKernel", 40, 43, 3, dev=False), ev("nvjet_gemm", 45, 60, 3),
        ev("nvjet_gemm", 55, 70, 4), ev("cudaLaunchKernel", 44, 46, 4, dev=False),  # overlap
        ev("cudaGraphLaunch", 80, 90, 5, dev=False), ev("void ltx::adaln_kernel", 95, 100, 5),
        ev("triton_red_fused_1", 101, 104, 5), ev("Memset (Unknown)", 105, 107, 5),
        ev("aten::add", 0, 200, 6, dev=False),  # an operator, not an API call
        ev("TorchDynamo Cache Lookup", 72, 78, 7, dev=False),  # inside the 70-80 gap
    ]
    t = _common().timeline(events)
    assert t["device_span_ms"] == pytest.approx(0.097)
    assert t["device_busy_ms"] == pytest.approx((10 + 8 + 25 + 5 + 3 + 2) / 1000)
    assert t["idle_host_bound_ms"] == pytest.approx((15 + 25) / 1000)  # before 45 and 95
    assert t["idle_other_ms"] == pytest.approx((2 + 1 + 1) / 1000)
    assert t["device_events"] == 7
    assert t["memsets"] == {"count": 1, "ms": pytest.approx(0.002),
                            "after": [{"count": 1, "name": "triton_red_fused_1"}]}
    assert t["host_bound_gaps"] == 2
    assert t["largest_host_bound_gaps"][0] == {"ms": pytest.approx(0.025),
                                               "before": "void ltx::adaln_kernel"}
    assert t["host_bound_idle_before_ms"] == {"ours": pytest.approx(0.025),
                                              "gemm": pytest.approx(0.015)}
    assert t["host_issue_span_ms"] == pytest.approx(0.090)
    assert t["graph_launches"] == 1
    # the largest gap (70 to 80 on the host, before the graph's kernels): what ran meanwhile
    assert t["largest_gap_host"] == [{"ms": pytest.approx(0.010), "name": "aten::add"},
                                     {"ms": pytest.approx(0.006),
                                      "name": "TorchDynamo Cache Lookup"}]
    between = t["host_between_calls"]
    assert between["ours"] == {"calls": 1, "total_ms": pytest.approx(0.034), "median_us": 34}
    assert between["gemm"]["calls"] == 2
    assert between["gemm"]["total_ms"] == pytest.approx((40 - 12 + 44 - 43) / 1000)
    assert _common().timeline([ev("cudaLaunchKernel", 0, 1, 1, dev=False)]) == {}


def test_gpu_monitor_device(backend):
    """Off CUDA the monitor records nothing; on a GPU with nvidia-smi it samples this process's
    device (found by UUID in nvidia-smi's listing) while the block runs."""
    import shutil
    import time

    mon = _common().GpuMonitor
    with mon(backend) as gpu:
        time.sleep(1.0)
    if backend == "cpu":
        assert gpu.summary is None
        return
    if shutil.which("nvidia-smi") is None:
        pytest.skip("no nvidia-smi on this GPU machine")
    assert gpu.summary is not None and gpu.summary["samples"] >= 3, gpu.lines
    assert 100 < gpu.summary["sm_mhz"]["median"] < 5000
    assert "SM clock" in mon.describe(gpu.summary)


def test_huggingface_kernels_example_local():
    p = run_script("huggingface_kernels_example.py", "--local", "--device", "cpu")
    assert "has_kernel" in p.stdout and "True" in p.stdout and "rms_norm on cpu" in p.stdout


def test_huggingface_kernels_example_no_hub():
    """No LOCAL_KERNELS and the Hub unreachable (offline mode, so the test never touches the
    network): a clear message and exit code 2, not a traceback."""
    env = {k: v for k, v in os.environ.items() if k != "LOCAL_KERNELS"}
    env["HF_HUB_OFFLINE"] = "1"
    p = subprocess.run([sys.executable, str(SCRIPTS / "huggingface_kernels_example.py")],
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "cannot reach the Hugging Face Hub" in p.stdout and f"LOCAL_KERNELS=\"{REPO_ID}=" in p.stdout
    assert "Traceback" not in p.stderr


def test_first_sync(backend):
    """first_sync names the line of a step that makes the host wait for the device (here an
    .item()), finds none in device-only work, and is None off CUDA without running fn."""
    import torch

    first_sync = _common().first_sync
    if backend == "cpu":
        assert first_sync(lambda: 1 / 0, "cpu") is None
        return
    x = torch.ones(4, device="cuda")
    assert first_sync(lambda: x * 2 + 1, "cuda") == []
    frames = first_sync(lambda: (x * 2).sum().item(), "cuda")
    assert frames and frames[-1].startswith("test_scripts.py:"), frames
    assert torch.cuda.get_sync_debug_mode() == 0  # restored


def test_host_profile_tiny(backend, tmp_path):
    """tools/host_profile.py: steps timed one by one, then cProfile's own and cumulative
    times, for the kernels and eager configurations; the injected functions and our ops are
    among the kernels configuration's, not eager's."""
    out = tmp_path / "host.json"
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "host_profile.py"), "--configs",
                        "kernels,eager", "--profile-steps", "1", "--top", "400", *TINY_LTX,
                        "--device", backend, "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr[-4000:]
    kernels, eager = json.loads(out.read_text())
    assert (kernels["config"], eager["config"]) == ("kernels", "eager")
    for r in (kernels, eager):
        assert len(r["ms_per_step"]) == 2 and r["ms_per_step_profiled"] > 0
        assert r["own"] and r["files"] and r["cumulative"]
    names = [row[3] for row in kernels["cumulative"]]
    assert any("integrations/diffusers.py" in n and "_ltx_block_forward" in n for n in names)
    assert any("ltx_kernels" in n and "gated_residual_adaln" in n for n in names)
    assert not any("integrations/" in row[3] or "ltx_kernels" in row[3]
                   for row in eager["cumulative"])
    assert "under cProfile" in p.stdout and "own time a step by source file" in p.stdout
    bad = subprocess.run([sys.executable, str(ROOT / "tools" / "host_profile.py"), "--configs",
                          "fast"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "unknown configs" in bad.stderr


def test_gpu_monitor_off(monkeypatch):
    """LTX_GPU_MONITOR=0: no nvidia-smi is started, on any device, and the summary is None."""
    common = _common()
    monkeypatch.setenv("LTX_GPU_MONITOR", "0")
    monkeypatch.setattr(common.shutil, "which", lambda name: "/usr/bin/" + name)

    def no_process(*a, **k):
        raise AssertionError("nvidia-smi started")

    monkeypatch.setattr(common.subprocess, "run", no_process)
    monkeypatch.setattr(common.subprocess, "Popen", no_process)
    monkeypatch.setattr(common.torch.cuda, "get_device_properties", no_process)
    with common.GpuMonitor("cuda") as gpu:
        pass
    assert gpu.summary is None
    monkeypatch.setenv("LTX_GPU_MONITOR", "1")  # on: it asks nvidia-smi for the devices
    with pytest.raises(AssertionError, match="nvidia-smi started"):
        with common.GpuMonitor("cuda"):
            pass
