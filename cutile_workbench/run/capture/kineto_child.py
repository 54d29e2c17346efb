"""torch.profiler (Kineto) fallback, always run in its OWN process, and TileGym's harness twin.

Why a child: in one process, a Kineto session made later cupti-python medians 2.1x wrong on the
H200 (docs/gpu.md §3); the two CUPTI clients must never share a process.

Contract:
- Child: ``python -m cutile_workbench.run.capture.kineto_child --factory MOD:FUNC --kwargs JSON --nrep N
  --out FILE [--batches B]``. ``FUNC(**kwargs)`` returns the zero-argument function to measure. The
  child warms up, then per sample does exactly what TileGym's ``benchmark_fn_cupti`` does
  (256 MB ``zero_`` + sync, one ``torch.profiler.profile(activities=[CUDA])`` session around
  ``fn(); synchronize()``, sample = Σ ``self_device_time_total`` of ``key_averages()``), and writes
  JSON: ``samples_ms`` per batch, ``wall_s`` per batch (batch 0 includes the first-session start-up),
  ``launches`` (per-launch rows of every sample: name, start/end ns, stream, correlation id).
- Parent: :func:`run_kineto_fallback` runs the child with a timeout and returns the harness dict
  (``capture_source == "kineto"``) plus a :class:`LaunchSet`; a crashing or hanging child raises
  :class:`CaptureError` naming the reason.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from cutile_workbench.errors import CaptureError
from cutile_workbench.model import CallCapture, Launch, LaunchSet


def _load_factory(spec: str) -> Any:
    module, _, func = spec.partition(":")
    if not module or not func:
        raise CaptureError(f"factory must be 'module:function', got {spec!r}", key="factory")
    return getattr(importlib.import_module(module), func)


def warmed_up(torch: Any, factory: str, kwargs: dict[str, Any], warmup_ms: float = 100.0) -> Any:
    """``factory(**kwargs)`` (the function to measure), called once and then for ``warmup_ms`` of
    wall time (TileGym's WARMUP default is 100 ms), synchronized: ready for the first sample."""
    fn = _load_factory(factory)(**kwargs)
    fn()
    torch.cuda.synchronize()
    deadline = time.perf_counter() + warmup_ms / 1000.0
    while time.perf_counter() < deadline:
        fn()
    torch.cuda.synchronize()
    return fn


def tilegym_style_samples(
    torch: Any, fn: Any, nrep: int, cache: Any
) -> tuple[list[float], list[list[dict[str, Any]]]]:
    """TileGym benchmark_fn_cupti's measuring loop (per-sample Kineto sessions), faithfully."""
    from torch.profiler import ProfilerActivity, profile

    samples: list[float] = []
    launches: list[list[dict[str, Any]]] = []
    for _ in range(nrep):
        cache.zero_()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        total_us = sum(e.self_device_time_total for e in prof.key_averages() if e.self_device_time_total > 0)
        samples.append(total_us / 1000.0)
        rows = []
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                rows.append(
                    {
                        "name": e.name,
                        "start_ns": int(e.time_range.start * 1000),
                        "end_ns": int(e.time_range.end * 1000),
                        "stream_id": int(e.device_resource_id),
                        "correlation_id": int(e.id),
                    }
                )
        launches.append(rows)
    return samples, launches


def child_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cutile_workbench.run.capture.kineto_child")
    ap.add_argument("--factory", required=True)
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("--nrep", type=int, default=100)
    ap.add_argument("--batches", type=int, default=1)
    ap.add_argument("--warmup-ms", type=float, default=100.0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    import torch

    fn = warmed_up(torch, args.factory, json.loads(args.kwargs), args.warmup_ms)
    cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
    batches = []
    for _ in range(args.batches):
        t0 = time.perf_counter()
        samples, launches = tilegym_style_samples(torch, fn, args.nrep, cache)
        batches.append({"wall_s": time.perf_counter() - t0, "samples_ms": samples, "launches": launches})
    Path(args.out).write_text(json.dumps({"batches": batches, "process_s": time.perf_counter() - t_start}))
    return 0


def run_kineto_fallback(
    factory: str,
    kwargs: dict[str, Any],
    *,
    backend: str,
    nrep: int = 100,
    timeout_s: float = 300.0,
    nodeid: str = "",
    params: str = "",
) -> tuple[dict[str, Any], LaunchSet]:
    """Measure in a child process with torch.profiler; see the module docstring."""
    from cutile_workbench.run.capture.harness import summarize

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kineto.json"
        cmd = [
            sys.executable,
            "-m",
            "cutile_workbench.run.capture.kineto_child",
            "--factory",
            factory,
            "--kwargs",
            json.dumps(kwargs),
            "--nrep",
            str(nrep),
            "--out",
            str(out),
        ]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, env=dict(os.environ)
            )
        except subprocess.TimeoutExpired:
            raise CaptureError(
                f"torch.profiler fallback child timed out after {timeout_s:.0f}s (killed)", key="kineto_child"
            ) from None
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            raise CaptureError(
                f"torch.profiler fallback child failed (exit {proc.returncode}): {' | '.join(tail)}",
                key="kineto_child",
            )
        data = json.loads(out.read_text())
    batch = data["batches"][-1]
    calls = []
    for i, rows in enumerate(batch["launches"]):
        launches = tuple(
            Launch(
                kind="memset"
                if r["name"].startswith("Memset")
                else "memcpy"
                if r["name"].startswith("Memcpy")
                else "kernel",
                name=r["name"],
                start_ns=r["start_ns"],
                end_ns=r["end_ns"],
                correlation_id=r["correlation_id"],
                stream_id=r["stream_id"],
            )
            for r in rows
        )
        start = min((x.start_ns for x in launches), default=0)
        end = max((x.end_ns for x in launches), default=0)
        calls.append(
            CallCapture(index=i, backend=backend, host_start_ns=start, host_end_ns=end, launches=launches)
        )
    res = summarize(batch["samples_ms"])
    res["samples"] = batch["samples_ms"]
    res["launch_counts"] = [len(c.launches) for c in calls]
    res["launches_per_call"] = (
        max(set(res["launch_counts"]), key=res["launch_counts"].count) if calls else None
    )
    res["capture_source"] = "kineto"
    return res, LaunchSet(nodeid=nodeid, backend=backend, params=params, calls=calls, source="kineto")


if __name__ == "__main__":
    sys.exit(child_main())
