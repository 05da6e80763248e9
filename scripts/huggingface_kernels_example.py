#!/usr/bin/env python3
"""Loading the kernel the two ways users do: from the Hugging Face Hub
(`kernels.has_kernel` / `kernels.get_kernel(repo_id, version=1)`), or from this checkout's
build with `LOCAL_KERNELS="<repo-id>=<checkout>"` (same call, no network), then one op.

    python scripts/huggingface_kernels_example.py --local          # this checkout's build/
    python scripts/huggingface_kernels_example.py                  # the Hub (needs network)
    python scripts/huggingface_kernels_example.py --repo-id org/other-kernel

Without `--local` and without Hub access, it says so and how to use the local build.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO_ID, ROOT, backend_kwargs, default_device  # noqa: E402


NETWORK_ERRORS = {"ConnectionError", "ConnectError", "OfflineModeIsEnabled",
                  "LocalEntryNotFoundError", "ConnectTimeout", "ReadTimeout", "MaxRetryError",
                  "NameResolutionError", "TimeoutError", "gaierror", "ProxyError", "SSLError"}


def network_cause(e: BaseException):
    """The error in e's chain that means 'no network / no Hub' (None: a real failure):
    a connection error, or the Hub's offline mode (HF_HUB_OFFLINE=1) without a cached copy."""
    return next((x for x in _chain(e) if type(x).__name__ in NETWORK_ERRORS
                 or "offline mode" in str(x)), None)


def _chain(e):
    while e is not None:
        yield e
        e = e.__cause__ or e.__context__


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--repo-id", default=REPO_ID)
    p.add_argument("--local", action="store_true",
                   help=f"LOCAL_KERNELS={REPO_ID}=<this checkout>: load build/ without the Hub")
    p.add_argument("--device", default=default_device())
    p.add_argument("--trust-remote-code", action=argparse.BooleanOptionalAction, default=None,
                   help="kernels' publisher-trust switch (default: on for this project's own "
                   "repo id, off for others)")
    args = p.parse_args(argv)
    trust = args.trust_remote_code if args.trust_remote_code is not None else (
        args.repo_id == REPO_ID)
    if args.local:
        os.environ["LOCAL_KERNELS"] = f"{args.repo_id}={ROOT}"
    from kernels import get_kernel, has_kernel

    source = os.environ.get("LOCAL_KERNELS") or "the Hub"
    kw = backend_kwargs(args.device)
    try:
        available = has_kernel(args.repo_id, version=1, trust_remote_code=trust, **kw)
        print(f"has_kernel({args.repo_id!r}, version=1{', backend=cpu' if kw else ''}) via "
              f"{source}: {available}")
        if not available:
            print("  no build of it for this torch / CUDA / platform")
            return 1
        k = get_kernel(args.repo_id, version=1, trust_remote_code=trust, **kw)
    except Exception as e:
        cause = network_cause(e)
        if cause is None:
            raise
        print(f"cannot reach the Hugging Face Hub for {args.repo_id!r} "
              f"({type(cause).__name__}: {str(cause).splitlines()[0][:160]}).\n"
              f"  Use this checkout's build instead: python tools/build.py, then\n"
              f"  LOCAL_KERNELS=\"{args.repo_id}={ROOT}\" python {Path(__file__).name}  "
              f"(or --local)")
        return 2
    print(f"loaded {k.__name__} from {Path(k.__file__).parent}")
    print(f"  ops: {', '.join(n for n in k.__all__ if n not in ('layers', 'ops', 'integrations'))}")
    x = torch.randn(2, 16, 2048, device=args.device, dtype=torch.float32)
    y = k.rms_norm(x, None, eps=1e-6)
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    print(f"  rms_norm on {x.device}: max |diff| vs PyTorch {(y - ref).abs().max().item():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
