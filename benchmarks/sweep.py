#!/usr/bin/env python3
"""Bandwidth sweep: every op against its peers, on one GPU, in one run.

For each (op, shape, dtype) it times ours and each peer that applies (eager PyTorch, F.rms_norm /
F.layer_norm, torch.compile of the eager math, Liger-Kernel) with CUDA events, the L2 flushed
before every repetition (by zeroing a 256 MB buffer as triton.testing.do_bench does, or with
--flush read by reading it), and takes the median. GB/s comes from an explicit byte model (each
input read once, each output written once); the share of a device copy is against a 1 GiB
device-to-device copy measured in the same run; --copy-ref also times a copy of each case's own
bytes, --stream-ref torch's vectorized elementwise kernel moving them (half read, half written),
--floor-ref a kernel that adds 1 to one float (the floor of the method). Fused ops are
also timed against the unfused sequence a user would write instead (each step with its fastest
implementation; column 'unfused', and a table of speedup against the ratio of bytes saved).
--monitor records the SM clock and power (nvidia-smi) while each implementation is timed.

    python benchmarks/sweep.py --quick            # a two-minute subset
    python benchmarks/sweep.py --ops rms_norm --dtypes bf16 --out bench-results
    python benchmarks/sweep.py --ops rms_norm --shapes 1x1024x4096,2x2688x2048 --impls ltx,liger

Writes <out>/sweep.csv, <out>/sweep.md and <out>/sweep.png (GB/s against bytes moved, one line per
implementation).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parent.parent
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
DEVICE = "cuda"  # where the cases allocate (tests build every case on the CPU to check them)


def load_kernel():
    from kernels import get_kernel

    with open(ROOT / "build.toml", "rb") as f:
        repo_id = tomllib.load(f)["general"]["hub"]["repo-id"]
    os.environ.setdefault("LOCAL_KERNELS", f"{repo_id}={ROOT}")
    return get_kernel(repo_id, version=1)


FLUSH = "zero"  # how the L2 is flushed before each repetition: "zero" or "read" (see bench)
_flush_buf: torch.Tensor | None = None


def flush_l2() -> None:
    """Evicts the L2 (60 MB on an H200) with a 256 MB buffer. "zero" writes it, as
    triton.testing.do_bench does: the L2 is then full of dirty lines that the timed kernel must
    write back as it evicts them (extra write traffic, up to the L2's size). "read" reads it
    (a sum): the L2 is left clean, as after a kernel that only read its inputs."""
    global _flush_buf
    if _flush_buf is None:
        _flush_buf = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device=DEVICE)
    if FLUSH == "zero":
        _flush_buf.zero_()
    else:
        _flush_buf.sum()


class ClockLog:
    """--monitor: the GPU's SM clock and power read (never set) by `nvidia-smi -lms 50` in a
    background process for the whole sweep, each sample with nvidia-smi's own timestamp, so
    that every implementation's timed repetitions can be given the clock they ran at (column
    `sm_mhz`, the median over the samples inside its windows). A memory-bound kernel's
    bandwidth hardly moves with the SM clock, but the short, latency-bound cases do, and the
    clock follows the power of what ran before (run U: Liger's RMSNorm 12% faster after
    torch.compile's kernel than after ours)."""

    def __init__(self):
        self.samples: list[tuple[float, float, float]] = []  # (epoch s, MHz, W)
        self._proc = None

    def start(self) -> bool:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            return False
        sys.path.insert(0, str(ROOT))
        from scripts._common import GpuMonitor

        try:
            # nvidia-smi counts every GPU of the host: the index of torch's device among them
            index = GpuMonitor.device_index(exe, torch.cuda.current_device())
            if index is None:
                return False
            self._proc = subprocess.Popen(
                [exe, f"--id={index}", "--query-gpu=timestamp,clocks.sm,power.draw",
                 "--format=csv,noheader,nounits", "-lms", "50"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except (OSError, RuntimeError, subprocess.SubprocessError):
            return False
        threading.Thread(target=self._read, daemon=True).start()
        return True

    def _read(self):
        for line in self._proc.stdout:
            sample = self.parse(line)
            if sample is not None:
                self.samples.append(sample)

    def stop(self):
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=5)

    @staticmethod
    def parse(line: str) -> tuple[float, float, float] | None:
        """(epoch seconds, SM MHz, W) from a line "2026/12/03 08:12:34.567, 1980, 412.3"
        (nvidia-smi's local time; None for anything else, "[N/A]" fields included)."""
        parts = [v.strip() for v in line.split(",")]
        if len(parts) != 3:
            return None
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            return t, float(parts[1]), float(parts[2])
        except ValueError:
            return None

    def stats(self, windows: list[tuple[float, float]]) -> tuple[float, float] | None:
        """Median MHz and W over the samples inside any of the (start, end) windows (epoch
        seconds); None until a sample after the last window's end has arrived (the reader
        lags) or when none fell inside."""
        if not windows or not self.samples or self.samples[-1][0] < max(e for _, e in windows):
            return None
        inside = [(m, w) for t, m, w in self.samples if any(a <= t <= b for a, b in windows)]
        if not inside:
            return None
        return (statistics.median(m for m, _ in inside), statistics.median(w for _, w in inside))


MONITOR: ClockLog | None = None  # --monitor
_windows: list[tuple[float, float]] = []  # the timed windows (epoch s) of bench's last call
WINDOWS: dict[str, list[tuple[float, float]]] = {}  # time_impls' last call: each impl's windows


def bench(fn: Callable[[], object], graph: bool = True) -> float:
    """Median GPU time in microseconds (CUDA events around each repetition, the L2 flushed
    before each; as triton.testing.do_bench, ~100 ms of repetitions after ~25 ms of warm-up).

    With `graph`, the call is captured once in a CUDA graph and its replays are timed, so that
    every implementation is measured by the GPU time of its kernels, without the CPU cost of
    launching them (Python wrappers, guards, Triton launchers differ a lot there)."""
    run = fn
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm up: compile, autotune, allocate before capture
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        run = g.replay
    # Estimate one repetition, then pick the counts (do_bench's 25 ms warm-up, 100 ms timed).
    run()
    torch.cuda.synchronize()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(5):
        flush_l2()
        run()
    t1.record()
    torch.cuda.synchronize()
    est = max(t0.elapsed_time(t1) / 5, 1e-3)  # ms, flush included
    n_warm, n_rep = max(1, int(25 / est)), max(10, min(int(100 / est), 10000))
    for _ in range(n_warm):
        run()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
    if MONITOR is not None:  # the window's wall-clock start when the GPU starts on it
        torch.cuda.synchronize()
    t_start = time.time()
    for s, e in zip(starts, ends):
        flush_l2()
        s.record()
        run()
        e.record()
    torch.cuda.synchronize()
    _windows.append((t_start, time.time()))
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2] * 1e3


ROUNDS = 1  # --rounds
ORDER = "shuffle"  # --order


def round_order(names: list[str], label: str, r: int, how: str | None = None) -> list[str]:
    """The order of round `r` (from 0) of a case's implementations: "alternate", the table's
    order in even rounds and its reverse in odd ones; "shuffle", a permutation drawn from a
    generator seeded by the case's label and the round, so that no implementation keeps the
    same predecessor from round to round and a rerun times the same orders."""
    if (how or ORDER) == "shuffle":
        order = list(names)
        random.Random(f"{label}/{r}").shuffle(order)
        return order
    return list(names) if r % 2 == 0 else list(names)[::-1]


def time_impls(fns: dict[str, Callable[[], object]], label: str, graph: bool,
               rounds: int | None = None, order: str | None = None) -> dict[str, float]:
    """`bench` of each implementation; one that fails is reported and left out. With several
    `rounds` (default: --rounds) each keeps the median of its rounds, timed in the orders
    `round_order` gives (default: --order): run U found Liger's RMSNorm up to 12% faster
    timed after torch.compile's kernel than right after ours, and run CC (change 84) that
    whichever implementation follows compile's kernel gains ~3%, so a time can depend on what
    ran before it: the alternating order gives each implementation the same neighbours in
    every round, the shuffled one (the default) does not."""
    times: dict[str, list[float]] = {}
    failed: set[str] = set()
    WINDOWS.clear()
    for r in range(rounds or ROUNDS):
        for name in round_order(list(fns), label, r, order):
            if name in failed:
                continue
            _windows.clear()
            try:
                times.setdefault(name, []).append(bench(fns[name], graph=graph))
                WINDOWS.setdefault(name, []).extend(_windows)
            except Exception as e:
                failed.add(name)
                times.pop(name, None)
                print(f"# {label} {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
    # In `fns`' order whatever the rounds' orders were: the table's columns and the CSV's rows
    # follow it (with --order shuffle they had followed the first round's draw).
    return {name: statistics.median(times[name]) for name in fns if name in times}


def copy_bandwidth() -> float:
    """GB/s of a 1 GiB device-to-device copy, counting bytes read plus bytes written."""
    src = torch.empty(2**30, dtype=torch.uint8, device=DEVICE)
    src.random_()
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src), graph=False)
    return 2 * src.numel() / (t * 1e-6) / 1e9


def try_liger():
    try:
        import liger_kernel.transformers.functional as lf  # noqa: F401

        return lf
    except Exception as e:  # not installed, or no Triton backend
        print(f"# Liger-Kernel unavailable: {e}", file=sys.stderr)
        return None


# ---- the cases --------------------------------------------------------------------------------


@dataclass
class Case:
    op: str
    shape: str
    dtype: str
    nbytes: int
    impls: dict[str, Callable[[], object]]
    check: tuple[str, Callable[[], torch.Tensor]] | None = None  # (impl, reference) for sanity
    check_ours: Callable[[], torch.Tensor] | None = None  # ours for the check, when not impls[impl]
    # Fused ops: the unfused sequence a user would write instead, as steps (name, {impl: call}),
    # each step timed with every implementation and the fastest kept; and the bytes it moves.
    unfused: list[tuple[str, dict[str, Callable[[], object]]]] | None = None
    unfused_nbytes: int = 0


_compiled: dict[str, Callable] = {}


def compiled(name: str, fn: Callable) -> Callable:
    if name not in _compiled:
        _compiled[name] = torch.compile(fn, dynamic=False)
    return _compiled[name]


def step(name: str, tag: str, fn: Callable, *args) -> tuple[str, dict[str, Callable]]:
    """One step of an unfused sequence: `fn(*args)` eager and compiled (static shapes)."""
    return name, {"eager": lambda: fn(*args), "compile": lambda: compiled(tag, fn)(*args)}


def modulate(h, scale, shift):
    return h * (1 + scale) + shift


def gated_add(x, y, gate):
    return x + y * gate


def weightless_rms_norm(x, eps):
    return F.rms_norm(x, (x.shape[-1],), None, eps)


def eager_llama_rms_norm(x, w, eps):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return w * h.to(x.dtype)


def rms_norm_case(k, lf, shape, dtype_name) -> Case:
    dtype = DTYPES[dtype_name]
    *lead, D = shape
    x = torch.randn(shape, dtype=dtype, device=DEVICE)
    w = (1 + 0.1 * torch.randn(D, device=DEVICE)).to(dtype)
    eps = 1e-6
    nbytes = 2 * x.numel() * x.element_size() + w.numel() * w.element_size()
    impls = {
        "ltx": lambda: k.rms_norm(x, w, eps, round_before_weight=True),
        "eager": lambda: eager_llama_rms_norm(x, w, eps),
        "F.rms_norm": lambda: F.rms_norm(x, (D,), w, eps),
        "compile": lambda: compiled(f"rms{shape}{dtype_name}", eager_llama_rms_norm)(x, w, eps),
    }
    if lf is not None:
        x2 = x.view(-1, D)
        impls["liger"] = lambda: lf.liger_rms_norm(x2, w, eps, 0.0, "llama", False)
    return Case("rms_norm", "x".join(map(str, shape)), dtype_name, nbytes, impls,
                check=("ltx", lambda: eager_llama_rms_norm(x, w, eps)))


def rnd(shape, dtype, scale=1.0):
    return scale * torch.randn(shape, dtype=torch.float32, device=DEVICE).to(dtype)


def eager_fused_add_rms_norm(x, r, w, eps):
    r = x + r
    return eager_llama_rms_norm(r, w, eps), r


def fused_add_rms_norm_case(k, lf, shape, dt) -> Case:
    dtype = DTYPES[dt]
    D = shape[-1]
    x, r, w = rnd(shape, dtype), rnd(shape, dtype), rnd(D, dtype, 0.1) + 1
    nbytes = 4 * x.numel() * x.element_size() + w.numel() * w.element_size()
    impls = {
        # In place, as vLLM's: each repetition adds x into residual again (values stay finite).
        "ltx": lambda: k.fused_add_rms_norm(x, r, w, 1e-6),
        "eager": lambda: eager_fused_add_rms_norm(x, r, w, 1e-6),
        "compile": lambda: compiled(f"far{shape}{dt}", eager_fused_add_rms_norm)(x, r, w, 1e-6),
    }
    if lf is not None:
        x2, r2 = x.view(-1, D), r.view(-1, D)
        impls["liger"] = lambda: lf.liger_fused_add_rms_norm(x2, r2, w, 1e-6, 0.0, "llama", True)
    xs, rs = x.clone(), r.clone()

    def ours_once():  # the check runs ours on copies, so the reference sees the same inputs
        xc, rc = xs.clone(), rs.clone()
        k.fused_add_rms_norm(xc, rc, w, 1e-6)
        return xc

    # Unfused: the residual add, then the norm of the sum (its best peer, Liger included).
    tag = f"{shape}{dt}"
    summed = xs + rs
    norm = step("rms_norm", f"far-n{tag}", eager_llama_rms_norm, summed, w, 1e-6)
    norm[1]["F.rms_norm"] = lambda: F.rms_norm(summed, (D,), w, 1e-6)
    if lf is not None:
        s2 = summed.view(-1, D)
        norm[1]["liger"] = lambda: lf.liger_rms_norm(s2, w, 1e-6, 0.0, "llama", False)
    unfused = [step("add", f"far-a{tag}", torch.add, xs, rs), norm]
    es = x.element_size()
    return Case("fused_add_rms_norm", "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: eager_fused_add_rms_norm(xs, rs, w, 1e-6)[0]),
                check_ours=ours_once, unfused=unfused,
                unfused_nbytes=5 * x.numel() * es + w.numel() * w.element_size())


def eager_adaln(x, scale, shift, eps):
    # LTX-Video: diffusers RMSNorm without weight (fp32 math, cast back), then the modulation.
    h = x.float()
    h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
    return h * (1 + scale) + shift


def adaln_case(k, lf, shape, dt, per_token=False) -> Case:
    dtype = DTYPES[dt]
    B, S, D = shape
    x = rnd(shape, dtype)
    mshape = (B, S, D) if per_token else (B, 1, D)
    scale, shift = rnd(mshape, dtype, 0.1), rnd(mshape, dtype, 0.1)
    es = x.element_size()
    nbytes = 2 * x.numel() * es + 2 * scale.numel() * es
    tag = "adaln_per_token" if per_token else "adaln"
    impls = {
        "ltx": lambda: k.adaln(x, scale, shift, norm="rms", eps=1e-6),
        "eager": lambda: eager_adaln(x, scale, shift, 1e-6),
        "compile": lambda: compiled(f"{tag}{shape}{dt}", eager_adaln)(x, scale, shift, 1e-6),
    }
    h = weightless_rms_norm(x, 1e-6)
    unfused = [step("rms_norm", f"{tag}-n{shape}{dt}", weightless_rms_norm, x, 1e-6),
               step("modulate", f"{tag}-m{shape}{dt}", modulate, h, scale, shift)]
    return Case(tag, "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: eager_adaln(x, scale, shift, 1e-6)), unfused=unfused,
                unfused_nbytes=4 * x.numel() * es + 2 * scale.numel() * es)


def eager_gated_residual_adaln(x, y, gate, scale, shift, eps):
    x = x + y * gate
    return x, eager_adaln(x, scale, shift, eps)


def gated_residual_adaln_case(k, lf, shape, dt) -> Case:
    dtype = DTYPES[dt]
    B, S, D = shape
    x, y = rnd(shape, dtype), rnd(shape, dtype)
    gate, scale, shift = (rnd((B, 1, D), dtype, 0.1) for _ in range(3))
    es = x.element_size()
    nbytes = 4 * x.numel() * es + 3 * gate.numel() * es
    f = eager_gated_residual_adaln
    impls = {
        "ltx": lambda: k.gated_residual_adaln(x, y, gate, scale, shift, norm="rms", eps=1e-6),
        "eager": lambda: f(x, y, gate, scale, shift, 1e-6),
        "compile": lambda: compiled(f"gra{shape}{dt}", f)(x, y, gate, scale, shift, 1e-6),
    }
    tag = f"{shape}{dt}"
    r = gated_add(x, y, gate)
    h = weightless_rms_norm(r, 1e-6)
    unfused = [step("gated add", f"gra-a{tag}", gated_add, x, y, gate),
               step("rms_norm", f"gra-n{tag}", weightless_rms_norm, r, 1e-6),
               step("modulate", f"gra-m{tag}", modulate, h, scale, shift)]
    unfused[0][1]["addcmul"] = lambda: torch.addcmul(x, y, gate)
    return Case("gated_residual_adaln", "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: f(x, y, gate, scale, shift, 1e-6)[1]),
                check_ours=lambda: k.gated_residual_adaln(x, y, gate, scale, shift, norm="rms",
                                                          eps=1e-6)[1],
                unfused=unfused, unfused_nbytes=7 * x.numel() * es + 3 * gate.numel() * es)


def gated_residual_case(k, lf, shape, dt) -> Case:
    # LTX-Video's self-attention residual `x + attn * gate_msa`, gate per sample.
    dtype = DTYPES[dt]
    B, S, D = shape
    x, y = rnd(shape, dtype), rnd(shape, dtype)
    gate = rnd((B, 1, D), dtype, 0.1)
    es = x.element_size()
    nbytes = 3 * x.numel() * es + gate.numel() * es
    impls = {
        "ltx": lambda: k.gated_residual(x, y, gate),
        "eager": lambda: gated_add(x, y, gate),
        "compile": lambda: compiled(f"gr{shape}{dt}", gated_add)(x, y, gate),
    }
    return Case("gated_residual", "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: gated_add(x, y, gate)))


def gelu_tanh_case(k, lf, shape, dt) -> Case:
    x = rnd(shape, DTYPES[dt])
    f = lambda t: F.gelu(t, approximate="tanh")  # noqa: E731
    impls = {
        "ltx": lambda: k.gelu_tanh(x),
        "eager": lambda: f(x),
        "compile": lambda: compiled(f"gelu{shape}{dt}", f)(x),
    }
    return Case("gelu_tanh", "x".join(map(str, shape)), dt, 2 * x.numel() * x.element_size(),
                impls, check=("ltx", lambda: f(x)))


def eager_geglu(x):
    a, g = x.chunk(2, dim=-1)
    return a * F.gelu(g, approximate="tanh")


def eager_geglu_erf(x):
    """diffusers' GEGLU at its default, the erf GELU (Stable Diffusion's feed-forward)."""
    a, g = x.chunk(2, dim=-1)
    return a * F.gelu(g)


def eager_silu_and_mul(x):
    a, b = x.chunk(2, dim=-1)
    return F.silu(a) * b


def gated_case(op, k, lf, shape, dt) -> Case:
    x = rnd(shape, DTYPES[dt])
    H = shape[-1] // 2
    eager = {"geglu": eager_geglu, "geglu_erf": eager_geglu_erf,
             "silu_and_mul": eager_silu_and_mul}[op]
    ours = {"geglu": lambda: k.geglu(x, "tanh"), "geglu_erf": lambda: k.geglu(x, "none"),
            "silu_and_mul": lambda: k.silu_and_mul(x)}[op]
    impls = {"ltx": ours, "eager": lambda: eager(x),
             "compile": lambda: compiled(f"{op}{shape}{dt}", eager)(x)}
    if lf is not None and op != "geglu_erf":  # Liger's GEGLU is the tanh GELU's only
        # Liger takes the two halves as separate tensors (its natural layout).
        first, second = x[..., :H].contiguous(), x[..., H:].contiguous()
        if op == "geglu":  # gelu(a) * b: the gate half is diffusers' second half
            impls["liger"] = lambda: lf.liger_geglu(second, first)
        else:
            impls["liger"] = lambda: lf.liger_swiglu(first, second)
    nbytes = 3 * (x.numel() // 2) * x.element_size()
    # Unfused: the activation of one half, then the product with the other (views of x).
    a, g = x.chunk(2, dim=-1)
    if op == "geglu":  # diffusers' GEGLU: value * gelu(gate), the gate is the second half
        act, value, gate = (lambda t: F.gelu(t, approximate="tanh")), a, g
    elif op == "geglu_erf":
        act, value, gate = F.gelu, a, g
    else:
        act, value, gate = F.silu, g, a
    acted = act(gate)
    unfused = [step("activation", f"{op}-a{shape}{dt}", act, gate),
               step("mul", f"{op}-m{shape}{dt}", torch.mul, value, acted)]
    return Case(op, "x".join(map(str, shape)), dt, nbytes, impls, check=("ltx", lambda: eager(x)),
                unfused=unfused, unfused_nbytes=5 * (x.numel() // 2) * x.element_size())


def eager_silu_mul(g, u):
    return F.silu(g) * u


def silu_mul_case(k, lf, shape, dt) -> Case:
    """transformers' LLaMA MLP: `act_fn(gate_proj(x)) * up_proj(x)`, gate and up separate
    `[..., H]` tensors (shape is gate's)."""
    g, u = rnd(shape, DTYPES[dt]), rnd(shape, DTYPES[dt])
    impls = {"ltx": lambda: k.silu_mul(g, u), "eager": lambda: eager_silu_mul(g, u),
             "compile": lambda: compiled(f"silu_mul{shape}{dt}", eager_silu_mul)(g, u)}
    if lf is not None:
        impls["liger"] = lambda: lf.liger_swiglu(g, u)
    es = g.element_size()
    acted = F.silu(g)
    unfused = [step("activation", f"silu_mul-a{shape}{dt}", F.silu, g),
               step("mul", f"silu_mul-m{shape}{dt}", torch.mul, acted, u)]
    return Case("silu_mul", "x".join(map(str, shape)), dt, 3 * g.numel() * es, impls,
                check=("ltx", lambda: eager_silu_mul(g, u)), unfused=unfused,
                unfused_nbytes=5 * g.numel() * es)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def eager_rope_qk(q, k, cos, sin):  # transformers' apply_rotary_pos_emb, unsqueeze_dim=1
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rope_qk_case_of(op, k, lf, shape, dt, q, kk, checked) -> Case:
    """A rope_qk case for q and k of B x S tokens (transformers' tables [B, S, D] in x's dtype,
    split halves) against eager, torch.compile and Liger; the check compares output `checked`
    (0: q, 1: k)."""
    B, S, D = q.shape[0], q.shape[-2], q.shape[-1]
    ang = torch.rand(B, S, D // 2, device=DEVICE) * 6.28
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
    es = q.element_size()
    nbytes = 2 * (q.numel() + kk.numel()) * es + 2 * cos.numel() * es
    c1, s1 = cos.unsqueeze(1), sin.unsqueeze(1)
    impls = {
        "ltx": lambda: k.rope_qk(q, kk, c1, s1, interleaved=False),
        "eager": lambda: eager_rope_qk(q, kk, cos, sin),
        "compile": lambda: compiled(f"{op}{shape}{dt}", eager_rope_qk)(q, kk, cos, sin),
    }
    if lf is not None:
        impls["liger"] = lambda: lf.liger_rope(q, kk, cos, sin)
    return Case(op, "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: eager_rope_qk(q, kk, cos, sin)[checked]),
                check_ours=lambda: k.rope_qk(q, kk, c1, s1, interleaved=False)[checked])


def rope_case(k, lf, shape, dt) -> Case:
    """q and k [B, H, S, D], contiguous, as many k heads as q heads."""
    q, kk = rnd(shape, DTYPES[dt]), rnd(shape, DTYPES[dt])
    return rope_qk_case_of("rope_qk", k, lf, shape, dt, q, kk, checked=0)


def rope_qk_gqa_case(k, lf, shape, dt) -> Case:
    """transformers' own layout (LLaMA, Mistral, Qwen): q and k [B, H, S, D] as transposed views
    of one fused QKV projection [B, S, (Hq + 2 Hk) D], fewer k heads than q heads (GQA); every
    output in q's and k's memory order (as eager's)."""
    B, S, Hq, Hk, D = shape
    qkv = rnd((B, S, (Hq + 2 * Hk) * D), DTYPES[dt])
    q = qkv[..., : Hq * D].view(B, S, Hq, D).transpose(1, 2)
    kk = qkv[..., Hq * D : (Hq + Hk) * D].view(B, S, Hk, D).transpose(1, 2)
    return rope_qk_case_of("rope_qk_gqa", k, lf, shape, dt, q, kk, checked=1)


def ltx_rope(x, cos, sin):
    # LTX-Video's apply_rotary_emb: interleaved pairs, fp32 tables, cast back.
    x_real, x_imag = x.unflatten(2, (-1, 2)).unbind(-1)
    x_rot = torch.stack([-x_imag, x_real], dim=-1).flatten(2)
    return (x.float() * cos + x_rot.float() * sin).to(x.dtype)


def eager_ltx_norm_rope(x, w, cos, sin, eps):
    # LTX-Video: torch.nn.RMSNorm(inner, eps=1e-5) (F.rms_norm), then apply_rotary_emb.
    return ltx_rope(F.rms_norm(x, (x.shape[-1],), w, eps), cos, sin)


def ltx_tables(B, S, D):
    """fp32 cos / sin `[B, S, D]` repeated per interleaved pair, as LTX-Video builds them."""
    ang = torch.rand(B, S, D // 2, device=DEVICE) * 6.28
    return ang.cos().repeat_interleave(2, -1), ang.sin().repeat_interleave(2, -1)


def rms_norm_rope_case(k, lf, shape, dt) -> Case:
    dtype = DTYPES[dt]
    B, S, D = shape
    x, w = rnd(shape, dtype), rnd(D, dtype, 0.1) + 1
    cos, sin = ltx_tables(B, S, D)
    nbytes = 2 * x.numel() * x.element_size() + 2 * cos.numel() * 4 + D * w.element_size()
    f = eager_ltx_norm_rope
    impls = {
        "ltx": lambda: k.rms_norm_rope(x, w, cos, sin, 1e-5, interleaved=True),
        "eager": lambda: f(x, w, cos, sin, 1e-5),
        "compile": lambda: compiled(f"nr{shape}{dt}", f)(x, w, cos, sin, 1e-5),
    }
    tag = f"{shape}{dt}"
    h = F.rms_norm(x, (D,), w, 1e-5)
    norm = step("rms_norm", f"nr-n{tag}", lambda t: F.rms_norm(t, (D,), w, 1e-5), x)
    unfused = [norm, step("rope", f"nr-r{tag}", ltx_rope, h, cos, sin)]
    es = x.element_size()
    return Case("rms_norm_rope", "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: f(x, w, cos, sin, 1e-5)), unfused=unfused,
                unfused_nbytes=4 * x.numel() * es + 2 * cos.numel() * 4 + D * es)


def rms_norm_rope_qk_case(k, lf, shape, dt, tables="per-sample") -> Case:
    """LTX-Video self-attention: q and k normalized across heads (each its own weight) and
    rotated by one pair of fp32 tables; the peers run the eager formula on each. `tables`:
    "per-sample" (`[B, S, D]`, the rope module's), "shared" (the tables of one sample expanded
    over the batch, batch stride 0, as the injection passed them eagerly in runs L-N) or
    "pairs" (one sample's pair tables `[1, S, D/2]`, `pair_tables=True`, as the injection
    passes them since run O; the peers repeat each value per pair inside their formula, so
    every implementation reads the same inputs); the byte model counts the tables once."""
    dtype = DTYPES[dt]
    B, S, D = shape
    q, kk = rnd(shape, dtype), rnd(shape, dtype)
    wq, wk = rnd(D, dtype, 0.1) + 1, rnd(D, dtype, 0.1) + 1
    cos, sin = ltx_tables(B if tables == "per-sample" else 1, S, D)
    pairs = tables == "pairs"
    if pairs:
        cos, sin = k.rope_pair_tables(cos, sin, interleaved=True)
    table_bytes = 2 * cos.numel() * 4
    if tables == "shared":
        cos, sin = cos.expand(B, S, D), sin.expand(B, S, D)
    nbytes = 4 * q.numel() * q.element_size() + table_bytes + 2 * D * wq.element_size()

    def full(c, s_):  # the peers' tables: pair values repeated per pair, inside the formula
        return (c.repeat_interleave(2, -1), s_.repeat_interleave(2, -1)) if pairs else (c, s_)

    def f(x, w, c, s_, eps):
        return eager_ltx_norm_rope(x, w, *full(c, s_), eps)

    def both(fn):
        return fn(q, wq, cos, sin, 1e-5), fn(kk, wk, cos, sin, 1e-5)

    impls = {
        "ltx": lambda: k.rms_norm_rope_qk(q, kk, wq, wk, cos, sin, 1e-5, interleaved=True,
                                          pair_tables=pairs),
        "eager": lambda: both(f),
        "compile": lambda: compiled(f"nrqk{shape}{dt}{tables}", lambda: both(f))(),
    }
    # Unfused: each of q and k normalized, then each rotated (the tables read twice).
    tag = f"{shape}{dt}{tables}"
    hq, hk = F.rms_norm(q, (D,), wq, 1e-5), F.rms_norm(kk, (D,), wk, 1e-5)

    def norms(a, b):
        return F.rms_norm(a, (D,), wq, 1e-5), F.rms_norm(b, (D,), wk, 1e-5)

    def ropes(a, b, c, s_):
        c, s_ = full(c, s_)
        return ltx_rope(a, c, s_), ltx_rope(b, c, s_)

    unfused = [step("rms_norm q, k", f"nrqk-n{tag}", norms, q, kk),
               step("rope q, k", f"nrqk-r{tag}", ropes, hq, hk, cos, sin)]
    es = q.element_size()
    op = {"per-sample": "rms_norm_rope_qk", "shared": "rms_norm_rope_qk_shared",
          "pairs": "rms_norm_rope_qk_pairs"}[tables]
    return Case(op, "x".join(map(str, shape)), dt, nbytes, impls,
                check=("ltx", lambda: both(f)), unfused=unfused,
                unfused_nbytes=8 * q.numel() * es + 2 * table_bytes + 2 * D * es)


# op -> (case builder, full shape list, --quick shapes)
SEED_SHAPES = [(1, 1024, 2048), (2, 1024, 2048), (4, 1024, 2048), (2, 4096, 3072),
               (4, 4096, 3072)]
LLM_TOKENS_HIDDEN = [(1, 4096), (16, 4096), (128, 4096), (1024, 4096), (4096, 4096),
                     (16384, 4096), (4096, 2048), (4096, 8192), (16384, 8192)]
LTX = [(2, 2688, 2048), (2, 6144, 2048), (2, 2688, 4096)]
TABLE: dict[str, tuple[Callable, list, list]] = {
    "rms_norm": (rms_norm_case, SEED_SHAPES + [(8, 8192, 4096)] + [(1, *t) for t in
                 LLM_TOKENS_HIDDEN] + LTX, SEED_SHAPES + [(8, 8192, 4096)]),
    "fused_add_rms_norm": (fused_add_rms_norm_case, [(1, *t) for t in LLM_TOKENS_HIDDEN],
                           [(1, 16, 4096), (1, 4096, 4096)]),
    "adaln": (adaln_case, SEED_SHAPES + LTX, [(2, 2688, 2048), (2, 6144, 2048)]),
    "adaln_per_token": (lambda k, lf, s, d: adaln_case(k, lf, s, d, per_token=True), LTX,
                        [(2, 2688, 2048)]),
    "gated_residual_adaln": (gated_residual_adaln_case, SEED_SHAPES + LTX, [(2, 2688, 2048)]),
    "gated_residual": (gated_residual_case, SEED_SHAPES + LTX, [(2, 2688, 2048)]),
    "gelu_tanh": (gelu_tanh_case, [(2, 2688, 8192), (2, 2688, 16384), (1, 4096, 3072)],
                  [(2, 2688, 8192)]),
    "geglu": (lambda k, lf, s, d: gated_case("geglu", k, lf, s, d),
              [(2, 4096, 16384), (2, 2688, 16384), (1, 1024, 4096)], [(2, 4096, 16384)]),
    "geglu_erf": (lambda k, lf, s, d: gated_case("geglu_erf", k, lf, s, d),
                  [(2, 4096, 10240), (1, 1024, 4096)], [(2, 4096, 10240)]),
    "silu_and_mul": (lambda k, lf, s, d: gated_case("silu_and_mul", k, lf, s, d),
                     [(1, 16, 28672), (1, 4096, 28672), (1, 16384, 28672), (1, 4096, 16384)],
                     [(1, 4096, 28672)]),
    # gate's shape (up the same): LLaMA-3-8B's MLP (H 14336) at 16, 4096, 16384 tokens
    "silu_mul": (silu_mul_case, [(1, 16, 14336), (1, 4096, 14336), (1, 16384, 14336),
                                 (1, 4096, 8192)], [(1, 4096, 14336)]),
    "rope_qk": (rope_case, [(1, 32, 4096, 128), (1, 32, 1024, 128), (4, 32, 4096, 64),
                            (1, 32, 16, 128)], [(1, 32, 4096, 128)]),
    # B x S x q heads x k heads x head dim: LLaMA-3-8B prefill (4096, 1024 tokens) and decode
    "rope_qk_gqa": (rope_qk_gqa_case, [(1, 4096, 32, 8, 128), (1, 1024, 32, 8, 128),
                                       (1, 16, 32, 8, 128)], [(1, 4096, 32, 8, 128)]),
    "rms_norm_rope": (rms_norm_rope_case, LTX, [(2, 2688, 2048)]),
    "rms_norm_rope_qk": (rms_norm_rope_qk_case, LTX, [(2, 2688, 2048)]),
    "rms_norm_rope_qk_shared": (lambda k, lf, s, d: rms_norm_rope_qk_case(k, lf, s, d,
                                                                         "shared"),
                                LTX, [(2, 2688, 2048)]),
    "rms_norm_rope_qk_pairs": (lambda k, lf, s, d: rms_norm_rope_qk_case(k, lf, s, d, "pairs"),
                               LTX, [(2, 2688, 2048)]),
}


# ---- output -----------------------------------------------------------------------------------


COLORS = {"ltx": "tab:blue", "eager": "tab:orange", "F.rms_norm": "tab:purple",
          "compile": "tab:green", "liger": "tab:red", "copy": "gray", "unfused": "tab:brown",
          "stream": "black"}
# Timed beside the implementations but not peers: references for the method (--floor-ref,
# --stream-ref) and the fused ops' unfused sequence (its own table). "copy" (--copy-ref) and
# "stream" are drawn, "floor" not.
REFERENCES = ("floor", "stream")
NOT_PEERS = ("ltx", "copy", "unfused") + REFERENCES
# The tables' columns: ours, the peers, the references, the unfused sequence (others after).
IMPL_ORDER = ("ltx", "eager", "F.rms_norm", "compile", "liger", "copy", "stream", "floor",
              "unfused")


def best_peer(times: dict[str, float]) -> tuple[str, float] | None:
    """The fastest peer among a case's timed implementations and its time (None when none
    ran)."""
    peers = [(name, t) for name, t in times.items() if name not in NOT_PEERS]
    return min(peers, key=lambda p: p[1]) if peers else None


def best_peer_time(times: dict[str, float]) -> float:
    """The fastest peer's time among a case's timed implementations (NaN when none ran)."""
    best = best_peer(times)
    return best[1] if best else math.nan


def fill_clocks(rows: list[dict]) -> None:
    """--monitor: each row's sm_mhz / power_w from its timed windows, once the samples cover
    them (rows without windows, the unfused sums, stay empty)."""
    if MONITOR is None:
        return
    for r in rows:
        if r.get("sm_mhz", "") == "" and r.get("_windows"):
            st = MONITOR.stats(r["_windows"])
            if st is not None:
                r["sm_mhz"], r["power_w"] = st


def write_outputs(rows: list[dict], out: Path, meta: dict, plot: bool = True) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep-meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    fields = ["op", "shape", "dtype", "impl", "us", "GBps", "copy_share", "MB", "vs_best_peer",
              "vs_unfused", "bytes_ratio", "steps", "sm_mhz", "power_w"]
    with open(out / "sweep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in fields})
    impls = sorted(dict.fromkeys(r["impl"] for r in rows),  # stable: unknown ones keep theirs
                   key=lambda i: IMPL_ORDER.index(i) if i in IMPL_ORDER else len(IMPL_ORDER))
    rounds = meta.get("rounds", 1)
    how = "shuffled" if meta.get("order") == "shuffle" else "alternating"
    rounds_note = f"; each the median of {rounds} rounds in {how} order" if rounds > 1 else ""
    lines = [f"GPU: {meta['gpu']}; torch {meta['torch']}; {meta['date']}; copy "
             f"{meta['copy_GBps']:.0f} GB/s. Time in us (median of CUDA-graph replays, "
             f"L2 flushed by {meta.get('flush', 'zero')}ing 256 MB"
             f"{', no graphs' if meta.get('no_graph') else ''}{rounds_note}), "
             "share of the copy bandwidth in brackets; last column: best peer time / ours."
             + (f" {meta['note']}" if meta.get("note") else ""), "",
             "| op | shape | dtype | MB | " + " | ".join(impls) + " | speedup |",
             "|" + "---|" * (len(impls) + 5)]
    keys = list(dict.fromkeys((r["op"], r["shape"], r["dtype"]) for r in rows))
    for key in keys:
        rs = {r["impl"]: r for r in rows if (r["op"], r["shape"], r["dtype"]) == key}
        cells = []
        for i in impls:
            r = rs.get(i)
            cells.append(f"{r['us']:.1f} ({100 * r['copy_share']:.0f}%)" if r else "-")
        mb = next(iter(rs.values()))["MB"]
        sp = rs.get("ltx", {}).get("vs_best_peer", "")
        sp_s = f"{sp:.2f}x" if sp != "" else "-"
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {mb:.1f} | " + " | ".join(cells)
                     + f" | {sp_s} |")
    fused = [r for r in rows if r["impl"] == "ltx" and r.get("vs_unfused")]
    if fused:
        steps = {(r["op"], r["shape"], r["dtype"]): r["steps"] for r in rows
                 if r["impl"] == "unfused"}
        lines += ["", "Fused ops against the unfused sequence a user would write, each step with "
                  "its fastest implementation (eager, torch.compile, F.*, Liger); target: a "
                  "speedup of at least the ratio of bytes saved.", "",
                  "| op | shape | dtype | ours us | unfused us (steps) | speedup | bytes ratio "
                  "| target |", "|---|---|---|---|---|---|---|---|"]
        for r in fused:
            key = (r["op"], r["shape"], r["dtype"])
            unf = r["us"] * r["vs_unfused"]
            met = "met" if r["vs_unfused"] >= r["bytes_ratio"] else "not met"
            lines.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['us']:.1f} | {unf:.1f} "
                         f"({steps.get(key, '')}) | {r['vs_unfused']:.2f}x | "
                         f"{r['bytes_ratio']:.2f} | {met} |")
    if any(r.get("sm_mhz", "") != "" for r in rows):
        lines += ["", "SM clock in MHz (median of nvidia-smi's samples, every 50 ms, while each "
                  "implementation's repetitions ran; --monitor).", "",
                  "| op | shape | dtype | " + " | ".join(impls) + " |",
                  "|" + "---|" * (len(impls) + 3)]
        for key in keys:
            rs = {r["impl"]: r for r in rows if (r["op"], r["shape"], r["dtype"]) == key}
            cells = [f"{float(rs[i]['sm_mhz']):.0f}" if rs.get(i, {}).get("sm_mhz", "") != ""
                     else "-" for i in impls]
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    (out / "sweep.md").write_text("\n".join(lines) + "\n")
    if not plot:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import NullFormatter
    except Exception as e:
        print(f"# no plot: {e}", file=sys.stderr)
        return
    for dtype, name in plot_files(rows).items():
        ops = list(dict.fromkeys(r["op"] for r in rows if r["dtype"] == dtype))
        ncols = min(4, len(ops))
        nrows = (len(ops) + ncols - 1) // ncols
        fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 4 * nrows), squeeze=False)
        for ax in axes.flat[len(ops):]:
            ax.set_visible(False)
        for ax, op in zip(axes.flat, ops):
            sizes = sorted({r["MB"] for r in rows if r["op"] == op and r["dtype"] == dtype})
            for impl in impls:
                pts = sorted((r["MB"], r["GBps"]) for r in rows
                             if r["op"] == op and r["impl"] == impl and r["dtype"] == dtype)
                if pts and impl != "floor":  # the floor's GB/s would mean nothing
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=impl,
                            color=COLORS.get(impl))
            ax.axhline(meta["copy_GBps"], color="gray", ls="--", label="device copy")
            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())  # overlapping 2x10^1 ... labels
            if sizes and math.floor(math.log10(sizes[0])) == math.floor(math.log10(sizes[-1])):
                # within one decade no power of ten falls in the axis: label the sizes instead
                ticks = {f"{mb:.3g}": mb for mb in sizes}  # one tick per distinct label
                ax.set_xticks(list(ticks.values()), list(ticks))
            ax.set_xlabel("MB moved")
            ax.set_ylabel("GB/s")
            ax.set_title(f"{op} ({dtype})")
            ax.legend(fontsize=8)
        fig.suptitle(f"{meta['gpu']}, torch {meta['torch']}, {meta['date']}")
        fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / (4 * nrows)))  # 0.4 in for the suptitle
        fig.savefig(out / name, dpi=120)
        plt.close(fig)


def plot_files(rows: list[dict]) -> dict[str, str]:
    """One plot per dtype in the rows: sweep.png for bf16 (or the only dtype when bf16 is
    absent), sweep-<dtype>.png for the others."""
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    main = "bf16" if "bf16" in dtypes else (dtypes[0] if dtypes else None)
    return {dt: "sweep.png" if dt == main else f"sweep-{dt}.png" for dt in dtypes}


def select_cases(ops: list[str], dtypes: list[str], quick: bool,
                 shapes: str | None = None) -> list[tuple[str, tuple, str]]:
    """The (op, shape, dtype) cases to run, in the table's order: each op's full or --quick
    shapes, only those named in `shapes` (comma-separated, e.g. "2x2688x2048") when given.
    ValueError when a named shape is none of the chosen ops' cases."""
    wanted = [w.strip() for w in shapes.split(",") if w.strip()] if shapes else None
    todo = [(op, shape, dt) for op in ops for dt in dtypes
            for shape in (TABLE[op][2] if quick else TABLE[op][1])]
    if wanted is None:
        return todo
    named = {"x".join(map(str, shape)) for _, shape, _ in todo}
    missing = [w for w in wanted if w not in named]
    if missing:
        raise ValueError(f"--shapes {missing}: not a case of {', '.join(ops)}"
                         f"{' (--quick)' if quick else ''}; their shapes: {sorted(named)}")
    return [c for c in todo if "x".join(map(str, c[1])) in wanted]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ops", default=",".join(TABLE), help="comma-separated ops")
    ap.add_argument("--dtypes", default=None, help="comma-separated (default: bf16,fp16; "
                    "bf16 with --quick)")
    ap.add_argument("--quick", action="store_true",
                    help="seed shapes only, and bf16 only unless --dtypes says otherwise")
    ap.add_argument("--out", default="bench-results")
    ap.add_argument("--impls", default=None,
                    help="comma-separated implementations to time (default: all; 'unfused' "
                         "is the fused ops' unfused sequence)")
    ap.add_argument("--no-graph", action="store_true",
                    help="time direct calls (CPU launch cost included) instead of graph replays")
    ap.add_argument("--flush", choices=["zero", "read"], default="zero",
                    help="L2 flush before each repetition: zero a 256 MB buffer (as "
                         "triton's do_bench; leaves dirty lines) or read it (leaves clean lines)")
    ap.add_argument("--shapes", default=None,
                    help="comma-separated shapes as the table writes them (e.g. "
                         "1x1024x4096,2x2688x2048): only those cases of the chosen ops (with "
                         "--quick: of its shapes); a shape that matches none of them is an error")
    ap.add_argument("--floor-ref", action="store_true",
                    help="also time the method's floor for each case (column 'floor'): one "
                         "kernel that adds 1 to one float, so a launch and one round trip to "
                         "memory after the flush; no op, ours or a peer's, can take less under "
                         "this method (issue 4's 1.3x target at a few MB is against it)")
    ap.add_argument("--copy-ref", action="store_true",
                    help="also time a device copy of each case's bytes (column 'copy': a "
                         "uint8 copy_, a memcpy node in the graph; on the H200 it ran at "
                         "~2.6 TB/s at 50-100 MB, slower than the row kernels)")
    ap.add_argument("--stream-ref", action="store_true",
                    help="also time torch's vectorized elementwise kernel (neg, bf16) reading "
                         "half of each case's bytes and writing the other half (column "
                         "'stream'): what a plain streaming kernel reaches at that size under "
                         "this method, against which issue 4's 90%% of the 1 GiB copy can be "
                         "judged; a reference, not a peer")
    ap.add_argument("--monitor", action="store_true",
                    help="record the SM clock and power (nvidia-smi every 50 ms) while each "
                         "implementation is timed: columns sm_mhz and power_w, and a table of "
                         "the clocks after the times")
    ap.add_argument("--rounds", type=int, default=1,
                    help="time each case's implementations N times, in the orders --order "
                         "gives, and keep each one's median (the order can move a time: "
                         "PERFORMANCE.md, run U, change 56; run CC, change 84)")
    ap.add_argument("--order", choices=("alternate", "shuffle"), default="shuffle",
                    help="the rounds' orders: a seeded shuffle a round (shuffle, the default "
                         "since run DD's tables), so that no implementation is always timed "
                         "right after the same one (run CC, change 84: the one after "
                         "torch.compile's kernel gains ~3%%), or the table's order and its "
                         "reverse in turn (alternate: run Z's and earlier tables)")
    args = ap.parse_args(argv)
    dtypes = (args.dtypes or ("bf16" if args.quick else "bf16,fp16")).split(",")
    ops = [o for o in args.ops.split(",") if o]
    bad = [d for d in dtypes if d not in DTYPES] + [o for o in ops if o not in TABLE]
    if bad:
        ap.error(f"unknown dtypes / ops {bad}; dtypes {list(DTYPES)}, ops {list(TABLE)}")
    try:
        todo = select_cases(ops, dtypes, args.quick, args.shapes)
    except ValueError as e:
        ap.error(str(e))
    global FLUSH, ROUNDS, ORDER
    FLUSH = args.flush
    ORDER = args.order
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    ROUNDS = args.rounds
    if not torch.cuda.is_available():
        print("sweep.py needs a CUDA GPU", file=sys.stderr)
        return 2

    # One compiled function per (op, shape, dtype): lift dynamo's recompile limits.
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 4096)
    global MONITOR
    if args.monitor:
        MONITOR = ClockLog()
        if not MONITOR.start():
            print("# --monitor: no nvidia-smi, no clocks", file=sys.stderr)
            MONITOR = None
    k = load_kernel()
    lf = try_liger()
    copy_gbps = copy_bandwidth()
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                date=datetime.date.today().isoformat(), copy_GBps=copy_gbps,
                no_graph=args.no_graph, flush=args.flush, rounds=args.rounds,
                order=args.order)
    print(f"# {meta['gpu']} torch {meta['torch']} copy {copy_gbps:.0f} GB/s", flush=True)
    rows: list[dict] = []
    for n, (op, shape, dt) in enumerate(todo, 1):
        case = TABLE[op][0](k, lf, shape, dt)
        if case.check is not None:
            ours, ref = case.check
            got, want = (case.check_ours or case.impls[ours])(), ref()
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            err = max(((g.double() - w.double()).norm() / w.double().norm()).item()
                      for g, w in zip(got, want, strict=True))
            if not err < 2e-2:
                raise SystemExit(f"{op} {case.shape} {dt}: relative error {err:.3g} vs reference")
        if args.copy_ref:  # a copy of the same bytes (half read, half written), same method
            src = torch.empty(case.nbytes // 2, dtype=torch.uint8, device=DEVICE)
            dst = torch.empty_like(src)
            case.impls["copy"] = lambda: dst.copy_(src)
        if args.stream_ref:  # a plain streaming kernel over the same bytes, same method
            half = torch.empty(case.nbytes // 4, dtype=torch.bfloat16, device=DEVICE)
            half_out = torch.empty_like(half)
            case.impls["stream"] = lambda: torch.neg(half, out=half_out)
        if args.floor_ref:  # the method's floor: a launch and one float read and written
            tiny = torch.zeros(1, device=DEVICE)
            case.impls["floor"] = lambda: tiny.add_(1.0)
        label = f"{op} {case.shape} {dt}"
        wanted = args.impls.split(",") if args.impls else None
        times = time_impls({name: fn for name, fn in case.impls.items()
                            if wanted is None or name in wanted}, label, not args.no_graph)
        windows = {name: list(ws) for name, ws in WINDOWS.items()}
        steps = ""
        if case.unfused and (wanted is None or "unfused" in wanted):
            # The unfused sequence: each step with its fastest implementation, times summed.
            parts, total = [], 0.0
            for step_name, fns in case.unfused:
                ts = time_impls(fns, f"{label} unfused {step_name}", not args.no_graph)
                if not ts:
                    break
                fastest = min(ts, key=ts.get)
                total += ts[fastest]
                parts.append(f"{step_name}: {fastest} {ts[fastest]:.1f}")
            else:
                times["unfused"] = total
                steps = "; ".join(parts)
        best_peer = best_peer_time(times)
        for name, t in times.items():
            gbps = case.nbytes / (t * 1e-6) / 1e9
            row = dict(op=op, shape=case.shape, dtype=dt, impl=name, us=t, GBps=gbps,
                       copy_share=gbps / copy_gbps, MB=case.nbytes / 1e6,
                       vs_best_peer=(best_peer / t) if name == "ltx" else "")
            if name == "unfused":
                row["steps"] = steps
            else:
                row["_windows"] = windows.get(name, [])
            if name == "ltx" and "unfused" in times:
                row["vs_unfused"] = times["unfused"] / t
                row["bytes_ratio"] = case.unfused_nbytes / case.nbytes
            rows.append(row)
        line = " ".join(f"{name}={t:.1f}" for name, t in times.items())
        print(f"[{n}/{len(todo)}] {op} {case.shape} {dt} ({case.nbytes / 1e6:.1f} MB): {line} us"
              f" -> ltx {case.nbytes / (times.get('ltx', math.nan) * 1e-6) / 1e9:.0f} GB/s",
              flush=True)
        del case
        torch.cuda.empty_cache()
        fill_clocks(rows)
        write_outputs(rows, Path(args.out), meta, plot=False)  # partial results survive a kill
    if MONITOR is not None:
        time.sleep(0.3)  # a sample after the last window
        fill_clocks(rows)
        MONITOR.stop()
    write_outputs(rows, Path(args.out), meta)
    print((Path(args.out) / "sweep.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
