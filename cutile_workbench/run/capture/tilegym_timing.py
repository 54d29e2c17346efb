"""Workbench-capture twins of TileGym's other torch.profiler call sites (``--workbench-harness``).

Why: under our harness the process must hold ONE CUPTI client. TileGym starts torch.profiler
(Kineto) in two more places than ``benchmark_fn_cupti``: the cutile-rs autotuner times every config
with it on the first call of a cache key (``tilegym.backend.cutile_rs.autotuner._bench_config_cupti``),
and ``tests.common._extract_kernel_times_from_profile`` profiles one call for the CUDA-event and
CUDA-graph harnesses. A Kineto session in our process replaced CUPTI's clock (every later kernel
read 2.1x: 817.90 vs 389.63 µs on the H200) and broke the autotuner on the next config ("CUPTI
returned 0 device time"). ``tilegym_swap.install`` replaces both with the functions below.

Contract:
- :func:`bench_config_cupti` has TileGym's signature and semantics: ``warmup`` calls (JIT; a
  ``RuntimeError`` mentioning ``illegal``/``out of memory``/``error code`` scores the config
  ``(None, inf)``, other errors propagate), then ``rep`` timed calls; a call's time is the sum of
  device times of its launches whose name matches ``kernel_filter`` (``re.search``; all when None);
  zero device time on the first call raises TileGym's ``RuntimeError``; returns
  ``(last output, median_ms)`` with TileGym's upper median (``sorted[len // 2]``). Timing uses the
  workbench capture: side windows of the open CuptiSession when one is open (a window measured
  around an autotune is then discarded and re-measured by the harness), else a CuptiSession of its
  own; without cupti-python (or with ``WORKBENCH_CAPTURE=events``, e.g. under Nsight Compute, which
  holds CUPTI itself), CUDA events behind a GPU sleep (``selfcheck``) — never Kineto.
- :func:`extract_kernel_times` has ``_extract_kernel_times_from_profile``'s contract:
  ``(dominant kernel name, [{name, self_time_us, total_time_us, count}, ...])`` sorted by self time,
  ``(None, [])`` on any failure, from one call captured the same way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from cutile_workbench.model import CallCapture
from cutile_workbench.run.capture.harness import kernel_times_of
from cutile_workbench.run.capture.session import CuptiSession, active_session, cupti_available

_CONFIG_SPECIFIC = ("illegal", "out of memory", "error code")


def _timed_calls(
    call: Callable[[], Any], n: int, backend: str
) -> tuple[Any, list[CallCapture] | None, list[float] | None]:
    """``n`` calls in CUPTI side windows: (last output, captures) — or events ms without cupti-python."""
    import torch

    out: Any = None
    outer = active_session()
    if outer is not None:
        first = len(outer.side_windows)
        for _ in range(n):
            with outer.call(side=True):
                out = call()
        return out, outer.captures(outer.side_windows[first:], backend=backend, expect_launches=False), None
    if cupti_available() is None and os.environ.get("WORKBENCH_CAPTURE", "auto") != "events":
        session = CuptiSession(backend, expect_launches=False)
        with session:
            for _ in range(n):
                with session.call(side=True):
                    out = call()
        return out, session.captures(session.side_windows, backend=backend), None
    from cutile_workbench.run.capture import selfcheck

    holder: list[Any] = []

    def keep() -> None:
        holder[:] = [call()]

    events = selfcheck.event_samples_ms(torch, keep, n, None)
    return (holder[0] if holder else None), None, events


def bench_config_cupti(
    kernel_fn: Callable[[Any], Any],
    cfg: Any,
    warmup: int = 2,
    rep: int = 10,
    kernel_filter: str | None = None,
) -> tuple[Any, float]:
    """Drop-in for TileGym's ``_bench_config_cupti`` (see the module docstring)."""
    import torch

    from cutile_workbench.ir import dumps

    stream = torch.cuda.current_stream()
    kernel_re = re.compile(kernel_filter) if kernel_filter else None
    dumps.emit(dumps.AUTOTUNE_MARKER.format(cfg=cfg))  # the JIT compile of this config follows
    try:
        for _ in range(warmup):
            kernel_fn(cfg)
        stream.synchronize()
    except (OSError, ImportError, FileNotFoundError, PermissionError):
        raise
    except RuntimeError as e:
        if any(word in str(e) for word in _CONFIG_SPECIFIC):
            return None, float("inf")
        raise
    stream.synchronize()
    out, calls, events = _timed_calls(lambda: kernel_fn(cfg), rep, backend=f"autotune {cfg}")
    if calls is None:
        assert events is not None
        times_us = [ms * 1000.0 for ms in events]
    else:
        times_us = [
            sum(x.duration_ns for x in c.launches if kernel_re is None or kernel_re.search(x.display_name))
            / 1000.0
            for c in calls
        ]
    if times_us and times_us[0] == 0:
        raise RuntimeError(
            f"CUPTI returned 0 device time for config {cfg}. Check that libcupti is installed and accessible."
        )
    times_ms = sorted(t / 1000.0 for t in times_us)
    median = times_ms[len(times_ms) // 2]
    dumps.emit(dumps.RESULT_MARKER.format(cfg=cfg, ms=f"{median:.6f}"))
    from cutile_workbench.run.capture.autotune_tables import record_candidate_config

    record_candidate_config(kernel_filter or "cutile-rs", cfg, times_us)  # issue 32: the candidate's table
    return out, median


def extract_kernel_times(fn: Callable[[], Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """Drop-in for TileGym's ``_extract_kernel_times_from_profile`` (see the module docstring)."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None, []
        _out, calls, _events = _timed_calls(fn, 1, backend="kernel_times")
        if not calls:
            return None, []
        rows = kernel_times_of(calls[0])
        return (rows[0]["name"] if rows else None), rows
    except Exception:
        return None, []
