"""Shared pieces of the profile suites: shapes, the TileGym-style ``benchmark_framework``, checks.

Contract: :func:`benchmark_framework` returns ``{framework: {"forward": stats}}`` exactly like
TileGym's ``tests.common.benchmark_framework`` (stats from the workbench harness, with the
benchmark_fn_cupti keys). Settings come from TileGym's env names ``WARMUP``/``REP``/``MIN_REP``
(ms, ms, count) plus ``MAX_REP`` and ``WORKBENCH_CAPTURE`` (auto|cupti|events).
:func:`gpu_or_skip` skips (never errors) without torch, CUDA or the backend's package.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

import pytest

#: (m, n) shapes of both profiles; the first three are the ones in docs/gpu.md §4
SHAPES: tuple[tuple[int, int], ...] = (
    (4096, 1024),
    (16384, 2048),
    (8192, 8192),
    (4096, 4096),
    (16384, 1024),
    (8192, 2048),
    (32768, 4096),
)

#: correctness tolerance vs a float64 torch reference, for bf16 outputs
BF16_TOL = {"atol": 3e-2, "rtol": 2e-2}
#: softmax outputs are small probabilities: a tight absolute bound (exp uses the APPROX rounding)
SOFTMAX_BF16_TOL = {"atol": 2e-3, "rtol": 2e-2}


def gpu_or_skip() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def need_module(name: str, why: str) -> None:
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{why}: module '{name}' is not installed")


def assert_close(
    torch: Any,
    out: Any,
    ref64: Any,
    what: str,
    atol: float = BF16_TOL["atol"],
    rtol: float = BF16_TOL["rtol"],
) -> None:
    """Fail the test (before timing) when ``out`` differs from the float64 reference."""
    got = out.to(torch.float64)
    err = (got - ref64).abs()
    bound = atol + rtol * ref64.abs()
    bad = int((err > bound).sum().item())
    assert bad == 0, (
        f"{what}: {bad} of {ref64.numel()} elements outside atol={atol} "
        f"rtol={rtol} vs float64 (max abs err {err.max().item():.3e})"
    )


def benchmark_framework(framework: str, fn: Callable[[], Any]) -> dict[str, Any]:
    from cutile_workbench.run.capture.harness import benchmark

    res = benchmark(
        fn,
        backend=framework,
        warmup_ms=float(os.environ.get("WARMUP", "100")),
        rep_ms=float(os.environ.get("REP", "50")),
        min_rep=int(os.environ.get("MIN_REP", "2")),
        max_rep=int(os.environ.get("MAX_REP", "1000")),
        capture=os.environ.get("WORKBENCH_CAPTURE", "auto"),
    )
    # raw samples at ns resolution keep the printed record compact
    res["samples"] = [round(s, 6) for s in res["samples"]]
    return {framework: {"forward": res}}


def next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())
