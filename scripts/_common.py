"""Shared by the scripts: load this checkout's kernel the way users load it from the Hub
(`kernels.get_kernel(<repo-id>, version=1)`), redirected to the local `build/` with
`LOCAL_KERNELS` unless the caller set it; pick device and dtype; time on the device."""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import tomllib
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
with open(ROOT / "build.toml", "rb") as _f:
    REPO_ID = tomllib.load(_f)["general"]["hub"]["repo-id"]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def backend_kwargs(device: str) -> dict:
    """kernels' `backend=` for `device`: on a CUDA torch `get_kernel` / `has_kernel` default to
    the CUDA variant, so the CPU one is asked for by name."""
    return {"backend": "cpu"} if torch.device(device).type == "cpu" and torch.version.cuda else {}


def load_kernel(device: str):
    """The kernel for `device`'s backend, from this checkout's build (LOCAL_KERNELS)."""
    os.environ.setdefault("LOCAL_KERNELS", f"{REPO_ID}={ROOT}")
    from kernels import get_kernel

    try:
        return get_kernel(REPO_ID, version=1, **backend_kwargs(device))
    except Exception as e:  # no build for this torch / backend
        raise SystemExit(f"cannot load {REPO_ID} from {ROOT}/build ({e}); "
                         f"build it first: python tools/build.py") from e


def progress(iterable, desc, args, total=None):
    """A tqdm bar on stderr over `iterable`, or the iterable itself with --no-progress."""
    if args.no_progress:
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stderr)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def device_name(device: str) -> str:
    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(torch.device(device))
    import platform

    return f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def rel_l2(out: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative L2 error ||out - ref|| / ||ref||, in float64."""
    out, ref = out.double(), ref.double()
    return ((out - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(torch.device(device))


def first_sync(fn, device: str):
    """Runs `fn` once with CUDA's sync debug mode at "error" (`torch.cuda.set_sync_debug_mode`),
    so that the first operation that makes the host wait for the device (`.item()`, a copy from
    pageable memory, an explicit synchronize) raises there. Returns that point's Python frames,
    innermost last, as "file:line in function" strings (at most 8); [] when `fn` ran without
    one; None off CUDA."""
    if torch.device(device).type != "cuda":
        return None
    sync(device)
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn()
    except RuntimeError as e:
        if "synchronizing" not in str(e):
            raise
        frames = traceback.extract_tb(e.__traceback__)
        return [f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames][-8:]
    finally:
        torch.cuda.set_sync_debug_mode("default")
        sync(device)
    return []


class Timer:
    """Wall time of a block, synchronized with the device before and after."""

    def __init__(self, device: str):
        self.device = device
        self.seconds = 0.0

    def __enter__(self):
        sync(self.device)
        self._t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        sync(self.device)
        self.seconds = time.perf_counter() - self._t


class GpuMonitor:
    """The GPU's state while a block runs, read (never set) with `nvidia-smi` every 100 ms in a
    background process: SM clock, temperature, power, and why the clock is below its maximum
    (`clocks_event_reasons.active`, where this nvidia-smi knows the field). The same kernels ran
    7-8% slower in later configurations of one process than in the first (PERFORMANCE.md, run
    D): this records whether the clocks moved, and why. `summary` is None off CUDA, without
    nvidia-smi, or if it fails; a benchmark never depends on it."""

    FIELDS = (("sm_mhz", "clocks.sm"), ("temp_c", "temperature.gpu"), ("power_w", "power.draw"))
    REASONS = "clocks_event_reasons.active"  # a bit mask, "0x0000000000000004"
    REASON_BITS = {0x1: "idle", 0x2: "applications clocks", 0x4: "software power cap",
                   0x8: "hardware slowdown", 0x10: "sync boost", 0x20: "software thermal",
                   0x40: "hardware thermal", 0x80: "hardware power brake",
                   0x100: "display clock"}

    def __init__(self, device: str):
        self.device = torch.device(device)
        self.lines: list[str] = []
        self.summary: dict | None = None
        self._proc = None

    def __enter__(self):
        exe = shutil.which("nvidia-smi")
        # LTX_GPU_MONITOR=0: no monitor (nvidia-smi's queries go through the driver, which the
        # host-bound configurations' kernel launches also wait on: PERFORMANCE.md, run U)
        if self.device.type != "cuda" or exe is None or os.environ.get("LTX_GPU_MONITOR") == "0":
            return self
        try:
            index = self.device_index(exe, self.device)
            if index is None:
                return self
            query = ",".join(q for _, q in self.FIELDS)
            # LTX_GPU_MONITOR_REASONS=0 leaves the reasons out (run N call 3 timed eager +
            # kernels with and without them: the host's speed moved as much either way)
            if os.environ.get("LTX_GPU_MONITOR_REASONS", "1") != "0":
                probe = subprocess.run([exe, f"--id={index}", f"--query-gpu={self.REASONS}",
                                        "--format=csv,noheader"], capture_output=True,
                                       text=True, timeout=10)
                if probe.returncode == 0 and probe.stdout.strip().startswith("0x"):
                    query += "," + self.REASONS
            cmd = [exe, f"--id={index}", f"--query-gpu={query}",
                   "--format=csv,noheader,nounits", "-lms", "100"]
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          text=True)
            self._reader = threading.Thread(target=self._read, daemon=True)
            self._reader.start()
        except (OSError, RuntimeError, subprocess.SubprocessError):
            self._proc = None
        return self

    def _read(self):
        for line in self._proc.stdout:
            self.lines.append(line)

    def __exit__(self, *exc):
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._reader.join(timeout=5)
        self.summary = self.parse(self.lines)

    @staticmethod
    def device_index(exe: str, device) -> str | None:
        """nvidia-smi's index of torch's CUDA `device` (smi_index over nvidia-smi's listing)."""
        listing = subprocess.run([exe, "--query-gpu=index,uuid", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout
        uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
        return GpuMonitor.smi_index(listing, None if uuid is None else str(uuid))

    @staticmethod
    def smi_index(listing: str, uuid: str | None) -> str | None:
        """nvidia-smi's index of this process's device (whatever CUDA_VISIBLE_DEVICES says),
        from `--query-gpu=index,uuid` lines ("0, GPU-8b1c..."): the one whose UUID holds torch's
        (with or without the "GPU-" prefix); the only one if there is one; else None."""
        rows = [[v.strip() for v in line.split(",")] for line in listing.strip().splitlines()
                if line.count(",") == 1]
        if uuid:
            uuid = uuid.removeprefix("GPU-")
            for index, u in rows:
                if uuid in u:
                    return index
        return rows[0][0] if len(rows) == 1 else None

    @staticmethod
    def parse(lines: list[str]) -> dict | None:
        """min / median / max of each field over the samples (lines "1980, 45, 312.5", with
        the clock event reasons' mask after them where queried), and for each reason the
        number of samples it was active in (`clock_reasons`, present only with the mask)."""
        n = len(GpuMonitor.FIELDS)
        samples, masks = [], []
        for line in lines:
            parts = [v.strip() for v in line.split(",")]
            try:
                values = [float(v) for v in parts[:n]]
                mask = int(parts[n], 16) if len(parts) == n + 1 else None
            except ValueError:  # "[N/A]" or a partial line at termination
                continue
            if len(values) == n and len(parts) <= n + 1:
                samples.append(values)
                masks.append(mask)
        if not samples:
            return None
        out = {"samples": len(samples)}
        for i, (name, _) in enumerate(GpuMonitor.FIELDS):
            col = [x[i] for x in samples]
            out[name] = {"min": min(col), "median": statistics.median(col), "max": max(col)}
        masks = [m for m in masks if m is not None]
        if masks:
            out["clock_reasons"] = {name: sum(bool(m & bit) for m in masks)
                                    for bit, name in GpuMonitor.REASON_BITS.items()
                                    if any(m & bit for m in masks)}
        return out

    @staticmethod
    def describe(s: dict) -> str:
        """One line for a `summary`."""
        line = (f"GPU state ({s['samples']} samples): SM clock {s['sm_mhz']['min']:.0f}-"
                f"{s['sm_mhz']['max']:.0f} MHz (median {s['sm_mhz']['median']:.0f}), "
                f"{s['temp_c']['max']:.0f} C max, {s['power_w']['median']:.0f} W median")
        if "clock_reasons" in s:
            held = ", ".join(f"{k} {v}" for k, v in s["clock_reasons"].items()) or "none"
            line += f"; clock held by (samples): {held}"
        return line


# transformers' hub layer names (as its decorators spell them) -> this package's layers
TRANSFORMERS_LAYERS = {
    "RMSNorm": "RMSNorm",
    "rotary_pos_emb": "RotaryPosEmb",
    "SiLU": "SiLU",
    "GeluTanh": "GeluTanh",
}


def transformers_kernel_mapping(kernel, device_type: str, mode=None, layers=None):
    """A `kernels.use_kernel_mapping` mapping from transformers' layer names (all, or those in
    `layers`) to this package's layers, in the exact build variant `kernel` was loaded from
    (LocalLayerRepository)."""
    from kernels import LocalLayerRepository, Mode

    variant = Path(kernel.__file__).parent
    mode = mode if mode is not None else Mode.INFERENCE
    return {
        hub_name: {device_type: {mode: LocalLayerRepository(repo_path=variant, layer_name=layer)}}
        for hub_name, layer in TRANSFORMERS_LAYERS.items() if layers is None or hub_name in layers
    }


# ---- profiler breakdown ----------------------------------------------------------------------

# Device kernel name -> category, first match. This package's kernels live in namespace ltx.
# Inductor names its kernels `triton_*` after every op they fuse (a fused rms-norm + rope that
# feeds attention is called `..._scaled_dot_product_...`), so its GEMM templates (`triton_tem`)
# and its other kernels are matched before the name-based attention / GEMM patterns.
CATEGORIES = [
    ("ours", re.compile(r"\bltx::|_ltx_kernels_")),
    ("gemm", re.compile(r"^triton_tem")),
    ("inductor elementwise / reduction", re.compile(r"^triton_")),
    ("attention", re.compile(r"flash|fmha|attention|attn|sdpa|cudnn", re.I)),
    ("gemm", re.compile(r"gemm|cutlass|nvjet|xmma|cublas|matmul|\bmm\b|addmm|linear|splitk",
                        re.I)),
    ("copy", re.compile(r"memcpy|memset|copy|cat|direct_copy", re.I)),
]


def categorize(name: str) -> str:
    for cat, pattern in CATEGORIES:
        if pattern.search(name):
            return cat
    return "other elementwise / reduction"


def profile_call(fn, device: str, top: int = 15) -> dict:
    """`fn()` once under the profiler: device time per category (kernels on CUDA; operators'
    self time on the CPU), the three largest kernels of each category, and the largest kernels
    outside GEMM / attention (what the kernels and torch.compile are meant to shrink)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.device(device).type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    sync(device)
    with profile(activities=activities) as prof:
        fn()
        sync(device)
    per_name: dict[str, float] = {}
    if cuda:
        from torch.autograd import DeviceType

        for e in prof.events():
            if e.device_type == DeviceType.CUDA:
                per_name[e.name] = per_name.get(e.name, 0.0) + e.time_range.elapsed_us()
    else:  # leaf operators' self time (no kernel events on the CPU)
        for e in prof.key_averages():
            if e.self_cpu_time_total > 0 and "::" in e.key:
                per_name[e.key] = per_name.get(e.key, 0.0) + e.self_cpu_time_total
    total = sum(per_name.values()) or 1.0
    cats: dict[str, float] = {}
    by_cat: dict[str, list] = {}
    for name, us in per_name.items():
        cat = categorize(name)
        cats[cat] = cats.get(cat, 0.0) + us
        by_cat.setdefault(cat, []).append((us, name))
    outside = sorted(((us, n) for n, us in per_name.items()
                      if categorize(n) not in ("gemm", "attention")), reverse=True)[:top]
    return {
        "timeline": timeline(prof.events()) if cuda else None,
        "unit": "device us" if cuda else "cpu self us",
        "total_ms": total / 1000,
        "categories_ms": {c: us / 1000 for c, us in sorted(cats.items(), key=lambda kv: -kv[1])},
        "top_per_category": {c: [{"name": n[:160], "ms": us / 1000}
                                 for us, n in sorted(v, reverse=True)[:3]]
                             for c, v in by_cat.items()},
        "top_outside_gemm_attention": [{"name": n[:160], "ms": us / 1000} for us, n in outside],
    }


def _is_api_call(name: str) -> bool:
    """A CUDA runtime or driver API call (cudaLaunchKernel, cuLaunchKernelEx, cudaMemsetAsync,
    cudaGraphLaunch, ...): the host side of a device event, which shares its correlation id."""
    return name.startswith("cu") and not name.startswith("cutlass")


def timeline(events, top: int = 8) -> dict:
    """Where the device waited, from one profiled call's events (`prof.events()`): the union
    of the device events (kernels, memsets, copies) and the gaps between them. A gap counts as
    **host-bound** when the API call that issued the next device event began only after the
    device had drained (the host was late), else as launch latency / dependency. Also the host
    time between consecutive issuing calls, grouped by the category of what each call issued
    (what a launch of ours, of inductor's or of cuBLAS's costs the host), the largest
    host-bound gaps, and the host's issuing span. For the largest host-bound gap, what the host
    ran meanwhile (`largest_gap_host`): the host events (operators, dynamo's cache lookup,
    compiled regions, ...; nested ones each counted) by their time inside the gap. Times in
    ms; device events that the profiler could not tie to an API call (e.g. inside a CUDA
    graph) take their graph launch's call."""
    from torch.autograd import DeviceType

    api: dict[int, tuple[float, float]] = {}
    device, host = [], []
    graph_launches = 0
    for e in events:
        if e.device_type == DeviceType.CUDA:
            device.append((e.time_range.start, e.time_range.end, e.id, e.name))
        elif _is_api_call(e.name):
            api[e.id] = (e.time_range.start, e.time_range.end)
            graph_launches += e.name.startswith("cudaGraphLaunch")
        else:
            host.append((e.time_range.start, e.time_range.end, e.name))
    if not device:
        return {}
    device.sort()
    busy = idle_host = idle_other = 0.0
    gaps, run_start, run_end = [], device[0][0], device[0][1]
    host_cost: dict[str, list[float]] = {}
    prev_call_end = None
    seen_calls = set()
    for start, end, cid, name in device:
        call = api.get(cid)
        if call is not None and cid not in seen_calls:  # one host cost per API call
            seen_calls.add(cid)
            if prev_call_end is not None:
                host_cost.setdefault(categorize(name), []).append(call[0] - prev_call_end)
            prev_call_end = call[1]
        if start > run_end:  # a gap before this event
            gap = start - run_end
            if call is not None and call[0] >= run_end:
                idle_host += gap
                gaps.append((gap, name, run_end, call[0]))
            else:
                idle_other += gap
            busy += run_end - run_start
            run_start, run_end = start, end
        else:
            run_end = max(run_end, end)
    busy += run_end - run_start
    span = device[-1][1] - device[0][0]
    # What each memset follows (they carry no stack or shape: the device event before one is
    # the best hint of who asked for it)
    memset_after: dict[str, int] = {}
    memset_us = 0.0
    for (_, _, _, before), (start, end, _, name) in zip(device, device[1:]):
        if name.startswith("Memset"):
            memset_after[before] = memset_after.get(before, 0) + 1
            memset_us += end - start
    calls = sorted(api[c] for c in seen_calls)
    by_cat = {}
    for cat, v in host_cost.items():
        v = sorted(v)
        by_cat[cat] = {"calls": len(v), "total_ms": sum(v) / 1000,
                       "median_us": v[len(v) // 2]}
    host_gaps_by_cat: dict[str, float] = {}
    for gap, name, *_ in gaps:
        host_gaps_by_cat[categorize(name)] = host_gaps_by_cat.get(categorize(name), 0.0) + gap
    in_gap: dict[str, float] = {}
    if gaps:
        _, _, g0, g1 = max(gaps)
        for start, end, name in host:
            overlap = min(end, g1) - max(start, g0)
            if overlap > 0:
                in_gap[name] = in_gap.get(name, 0.0) + overlap
    return {
        "device_span_ms": span / 1000,
        "device_busy_ms": busy / 1000,
        "idle_host_bound_ms": idle_host / 1000,
        "idle_other_ms": idle_other / 1000,
        "host_bound_gaps": len(gaps),
        "host_bound_idle_before_ms": {c: us / 1000 for c, us in
                                      sorted(host_gaps_by_cat.items(), key=lambda kv: -kv[1])},
        "largest_host_bound_gaps": [{"ms": g / 1000, "before": n[:120]}
                                    for g, n, *_ in sorted(gaps, reverse=True)[:top]],
        "largest_gap_host": [{"ms": us / 1000, "name": n[:120]} for n, us in
                             sorted(in_gap.items(), key=lambda kv: -kv[1])[:top]],
        "host_issue_span_ms": (calls[-1][1] - calls[0][0]) / 1000 if calls else None,
        "graph_launches": graph_launches,
        "device_events": len(device),
        "memsets": {"count": sum(memset_after.values()), "ms": memset_us / 1000,
                    "after": [{"count": c, "name": n[:120]} for n, c in
                              sorted(memset_after.items(), key=lambda kv: -kv[1])[:3]]},
        "host_between_calls": dict(sorted(by_cat.items(), key=lambda kv: -kv[1]["total_ms"])),
    }


def print_timeline(t: dict) -> None:
    if not t:
        return
    print(f"    timeline: device span {t['device_span_ms']:.2f} ms, busy "
          f"{t['device_busy_ms']:.2f}, idle waiting for the host {t['idle_host_bound_ms']:.2f} "
          f"({t['host_bound_gaps']} gaps), other idle {t['idle_other_ms']:.2f}; host issued "
          f"over {t['host_issue_span_ms'] or 0:.2f} ms, {t['graph_launches']} CUDA graph "
          f"launches, {t.get('device_events', 0)} device events")
    m = t.get("memsets") or {}
    if m.get("count"):
        print(f"      {m['count']} memsets, {m['ms']:.3f} ms; each after (count):")
        for a in m["after"]:
            print(f"        {a['count']:5d}  {a['name'][:90]}")
    for cat, ms in t["host_bound_idle_before_ms"].items():
        print(f"      host-bound idle before {cat:34s} {ms:8.3f} ms")
    for cat, c in t["host_between_calls"].items():
        print(f"      host time before each {cat:34s} {c['calls']:5d} calls, "
              f"{c['total_ms']:8.3f} ms, median {c['median_us']:6.1f} us")
    for g in t["largest_host_bound_gaps"][:4]:
        print(f"      gap {g['ms']:7.3f} ms before {g['before'][:80]}")
    if t.get("largest_gap_host"):
        print("      the host during the largest gap (nested events each counted):")
        for h in t["largest_gap_host"]:
            print(f"        {h['ms']:7.3f} ms  {h['name'][:90]}")


def print_profile(config: str, prof: dict, what: str = "one step") -> None:
    print(f"\n  profile of {what}, {config} ({prof['unit']}), total {prof['total_ms']:.2f} ms:")
    for cat, ms in prof["categories_ms"].items():
        print(f"    {cat:34s} {ms:9.3f} ms  {100 * ms / prof['total_ms']:5.1f}%")
        if cat in ("gemm", "attention"):
            for k in prof["top_per_category"][cat]:
                print(f"        {k['ms']:8.3f} ms  {k['name'][:96]}")
    print("    largest outside gemm / attention:")
    for k in prof["top_outside_gemm_attention"]:
        print(f"      {k['ms']:8.3f} ms  {k['name'][:100]}")
    print_timeline(prof.get("timeline"))
