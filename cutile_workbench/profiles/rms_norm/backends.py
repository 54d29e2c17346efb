"""RMSNorm backends of the profile: name → zero-argument callable over prepared tensors.

``cutile-hotpath`` is deliberately flawed (the F-stage FIXABLE pattern of contract §7.2): it
allocates and fills a copy of the input on every call (``zeros_like(x).add_(x)``) before running
the clean cuTile kernel, i.e. 3 launches per call (fill, add, rms_norm) instead of 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

EPS = 1e-5


def reference64(x: torch.Tensor, w: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    x64 = x.to(torch.float64)
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.to(torch.float64)


def torch_eager(x: torch.Tensor, w: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    # HuggingFace-style reference in fp32, as TileGym's Test_RMSNorm.reference does
    xf = x.to(torch.float32)
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.to(torch.float32)).to(x.dtype)


def make(framework: str, x: torch.Tensor, w: torch.Tensor, eps: float = EPS) -> Callable[[], Any]:
    if framework == "pytorch":
        return lambda: torch_eager(x, w, eps)
    if framework == "triton":
        from cutile_workbench.profiles.rms_norm import kernels_triton

        return lambda: kernels_triton.rms_norm(x, w, eps)
    if framework == "cutile":
        from cutile_workbench.profiles.rms_norm import kernels_cutile

        return lambda: kernels_cutile.rms_norm(x, w, eps)
    if framework == "cutile-hotpath":
        from cutile_workbench.profiles.rms_norm import kernels_cutile

        return lambda: kernels_cutile.rms_norm(torch.zeros_like(x).add_(x), w, eps)
    if framework == "tilegym":
        import tilegym

        tilegym.set_backend("cutile")
        return lambda: tilegym.ops.rms_norm(x, (x.shape[-1],), w, eps)
    raise ValueError(f"unknown rms_norm framework {framework!r}")


def factory(framework: str, m: int, n: int, seed: int = 0) -> Callable[[], Any]:
    """Inputs + function in one call (for child processes: harness_cost, the Kineto fallback)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn((m, n), dtype=torch.bfloat16, device="cuda", generator=gen)
    w = torch.randn((n,), dtype=torch.bfloat16, device="cuda", generator=gen)
    return make(framework, x, w)
