"""Softmax backends of the profile: name → zero-argument callable over a prepared input.

``cutile-hotpath`` is the deliberately flawed wrapper (``zeros_like(x).add_(x)`` before the op:
3 launches per call instead of 1); ``cutile-row`` is the second cuTile variant (one block per row).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def reference64(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.to(torch.float64), dim=-1)


def make(framework: str, x: torch.Tensor) -> Callable[[], Any]:
    if framework == "pytorch":
        return lambda: torch.softmax(x, dim=-1)
    if framework == "triton":
        from cutile_workbench.profiles.softmax import kernels_triton

        return lambda: kernels_triton.softmax(x)
    if framework in ("cutile", "cutile-row"):
        from cutile_workbench.profiles.softmax import kernels_cutile

        variant = "row" if framework == "cutile-row" else "persistent"
        return lambda: kernels_cutile.softmax(x, variant)
    if framework == "cutile-hotpath":
        from cutile_workbench.profiles.softmax import kernels_cutile

        return lambda: kernels_cutile.softmax(torch.zeros_like(x).add_(x))
    if framework == "tilegym":
        import tilegym

        tilegym.set_backend("cutile")
        return lambda: tilegym.ops.softmax(x)
    raise ValueError(f"unknown softmax framework {framework!r}")


def factory(framework: str, m: int, n: int, seed: int = 0) -> Callable[[], Any]:
    """Input + function in one call (for child processes: harness_cost, the Kineto fallback)."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    return make(framework, torch.randn((m, n), dtype=torch.bfloat16, device="cuda", generator=gen))
