"""Measuring harness: benchmark_fn_cupti's result keys, one capture session for all samples.

Contract: :func:`benchmark` returns TileGym ``benchmark_fn_cupti``'s keys (``mean std rel_std median
min max nrep peak_mem_mb kernel_name kernel_times``; ms, ``rel_std`` in %, ``kernel_times`` of the last
call) plus ``samples`` (raw ms per call), ``launches_per_call`` (the most common per-call launch count),
``capture_source`` ("cupti" | "events"), ``harness`` ("workbench"), ``capture`` (window mode, the
CUPTI clock check, samples discarded and re-measured) and, for CUPTI captures, ``capture_check``
(``selfcheck``: CUPTI vs CUDA events behind a GPU sleep; ``verdict`` "suspect" means the median is
not valid) and ``clocks`` (NVML's SM clock and throttle exposure read after each kept call, outside
its window; ``WORKBENCH_DISCARD_THROTTLED=1`` drops throttled calls: see ``capture.clocks``). A
sample whose window was contaminated (a Kineto session or an autotuner's timing inside it, see
``session``) is discarded and measured again, up to ``nrep`` extra windows; more
contamination than that refuses the config (CaptureError). A sample is the sum
of device times of every GPU activity attributed to that call (TileGym's measured sum); with the
events fallback it is the CUDA-event elapsed time and ``kernel_times`` is empty ("no launch data").
With ``WORKBENCH_PROFILE_RANGE=1`` (set by the focused Nsight Compute probe, ``f_evidence.ncu``) it
opens no CUPTI session: it warms up (JIT, autotune) as usual, then runs exactly one L2-flushed call
inside ``cudaProfilerStart/Stop`` for ``ncu --profile-from-start off`` and returns that call's
CUDA-event time (``capture_source`` "profile-range").
``median`` is torch's lower median (``Tensor.median``), so values agree with TileGym's harness.

Differences from TileGym on purpose: warm-up by elapsed time, one CUPTI session for all samples
(no per-sample profiler start-up; per sample only the kernel kind is re-enabled after a forced
flush, which is what makes the medians agree with TileGym's: see ``session``'s window mode), L2
flush (256 MB ``zero_`` + sync) between samples outside the window, and :func:`benchmark_pair`
interleaves two functions A B A B in one session. Per-launch
records go to ``cutile_workbench.artifacts.events.emit(None, "launches", ...)`` and, when ``WORKBENCH_LAUNCHES_DIR``
is set, to a gzip side file per call of :func:`benchmark`.

Launch attribution (issue 32, :func:`attribution_call`): the session's first call is never a sample;
with a CUPTI capture it runs in a side window under a CUPTI callback subscriber
(:mod:`~cutile_workbench.run.capture.attribution`, unsubscribed before the first timed sample), and
every activity it issued is published with the Python stack that issued it (the launch set's
``attribution``); the record's ``capture.attribution`` says how many got a stack, or why none did.
``WORKBENCH_ATTRIBUTION=0`` switches it off. On the H200 the timed medians did not move (+0.02 %,
+0.05 %: BENCHMARKS §10).
"""

from __future__ import annotations

import gc
import math
import os
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from cutile_workbench.errors import CaptureError
from cutile_workbench.model import AttributedLaunch, CallCapture, LaunchSet
from cutile_workbench.run.capture import attribution, selfcheck
from cutile_workbench.run.capture.clocks import ClockSampler, discard_throttled, open_sampler
from cutile_workbench.run.capture.session import CuptiSession, EventsSession, open_session

L2_FLUSH_BYTES = 256 * 1000 * 1000  # TileGym: torch.empty(int(256e6 // 4), dtype=torch.int)


def summarize(samples_ms: Sequence[float]) -> dict[str, Any]:
    """mean/std/rel_std/median/min/max/nrep with torch semantics (unbiased std, lower median)."""
    n = len(samples_ms)
    if n == 0:
        raise CaptureError("no samples to summarize", key="samples")
    mean = math.fsum(samples_ms) / n
    std = statistics.stdev(samples_ms) if n > 1 else float("nan")
    ordered = sorted(samples_ms)
    return {
        "mean": mean,
        "std": std,
        "rel_std": (std / mean) * 100 if mean > 0 and n > 1 else 0,
        "median": ordered[(n - 1) // 2],
        "min": ordered[0],
        "max": ordered[-1],
        "nrep": n,
    }


def kernel_times_of(call: CallCapture) -> list[dict[str, Any]]:
    """TileGym's ``kernel_times`` rows for one call: per name self/total µs and launch count."""
    rows: dict[str, dict[str, Any]] = {}
    for launch in call.launches:
        row = rows.setdefault(
            launch.display_name,
            {"name": launch.display_name, "self_time_us": 0.0, "total_time_us": 0.0, "count": 0},
        )
        row["self_time_us"] += launch.duration_ns / 1000.0
        row["total_time_us"] += launch.duration_ns / 1000.0
        row["count"] += 1
    return sorted(rows.values(), key=lambda r: r["self_time_us"], reverse=True)


def current_test() -> tuple[str, str]:
    """(nodeid, params) of the running pytest test, from PYTEST_CURRENT_TEST; ("", "") outside."""
    from cutile_workbench.artifacts.testids import split_nodeid

    cur = os.environ.get("PYTEST_CURRENT_TEST", "")
    nodeid = cur.rsplit(" (", 1)[0] if cur else ""
    return nodeid, (split_nodeid(nodeid)[2] if nodeid else "")


def _estimate_ms(torch: Any, fn: Callable[[], Any], initial_rep: int) -> float:
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(initial_rep):
        fn()
    end.record()
    torch.cuda.synchronize()
    return max(start.elapsed_time(end) / initial_rep, 1e-4)


def _warm_up(torch: Any, fns: Sequence[Callable[[], Any]], warmup_ms: float) -> None:
    # By elapsed wall time (TileGym converts its budget into a count from a 5-call estimate).
    deadline = time.perf_counter() + warmup_ms / 1000.0
    while True:
        for fn in fns:
            fn()
        torch.cuda.synchronize()
        if time.perf_counter() >= deadline:
            break


def _prepare_memory(torch: Any) -> None:
    torch.cuda.empty_cache()
    gc.collect()
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def _result(
    calls: list[CallCapture],
    samples: list[float],
    source: str,
    peak_mem_mb: int,
    session: Any = None,
    check: dict[str, Any] | None = None,
) -> dict[str, Any]:
    res = summarize(samples)
    res["peak_mem_mb"] = peak_mem_mb
    last_rows = kernel_times_of(calls[-1]) if calls else []
    if last_rows:
        res["kernel_name"] = last_rows[0]["name"]
        res["kernel_times"] = last_rows
    counts = [len(c.launches) for c in calls]
    res["samples"] = samples
    res["launches_per_call"] = Counter(counts).most_common(1)[0][0] if counts and source != "events" else None
    res["capture_source"] = source
    res["harness"] = "workbench"
    if isinstance(session, CuptiSession):
        res["capture"] = session.capture_meta()
    if check is not None:
        res["capture_check"] = check
    return res


def _samples_of(
    session: Any,
    calls: list[CallCapture],
    idx: Sequence[int] | None = None,
    kernel_filter: str | Sequence[str] | None = None,
) -> list[float]:
    if isinstance(session, EventsSession):
        elapsed = session.elapsed_ms()
        return [elapsed[i] for i in idx] if idx is not None else elapsed
    if kernel_filter is None:
        return [c.device_time_ns / 1e6 for c in calls]
    # TileGym semantics: a sample sums only launches whose name matches ANY pattern (re.search).
    patterns = (
        [re.compile(kernel_filter)]
        if isinstance(kernel_filter, str)
        else [re.compile(p) for p in kernel_filter]
    )
    samples = [
        sum(x.duration_ns for x in c.launches if any(p.search(x.display_name) for p in patterns)) / 1e6
        for c in calls
    ]
    if calls and samples[0] == 0:
        names = sorted({x.display_name for x in calls[0].launches})
        raise CaptureError(
            f"kernel_filter matched no GPU kernels. Filter: {kernel_filter}, actual kernels: {names}",
            key="kernel_filter",
        )
    return samples


def _publish(
    calls: list[CallCapture],
    backend: str,
    source: str,
    nodeid: str | None,
    params: str | None,
    attributed: tuple[AttributedLaunch, ...] = (),
) -> None:
    auto_nodeid, auto_params = current_test()
    nodeid = nodeid if nodeid is not None else auto_nodeid
    params = params if params is not None else auto_params
    launch_set = LaunchSet(
        nodeid=nodeid, backend=backend, params=params, calls=calls, source=source, attribution=attributed
    )
    from cutile_workbench.artifacts import launches_io

    try:
        from cutile_workbench.artifacts import events
    except ImportError:  # the perflog engineer's module; the harness works without it
        events = None  # type: ignore[assignment]
    if events is not None:
        events.emit(
            None,
            "launches",
            nodeid=nodeid,
            backend=backend,
            params=params,
            source=source,
            calls=[launches_io.call_to_dict(c) for c in calls],
            **(
                {"attribution": [launches_io.attributed_to_dict(a) for a in attributed]} if attributed else {}
            ),
        )
    out_dir = os.environ.get("WORKBENCH_LAUNCHES_DIR")
    if out_dir:
        launches_io.append_side_file(Path(out_dir), launch_set)


PROFILE_RANGE_ENV = "WORKBENCH_PROFILE_RANGE"


def _profiled_call(torch: Any, fn: Callable[[], Any], cache: Any) -> dict[str, Any]:
    """One call inside cudaProfilerStart/Stop for ``ncu --profile-from-start off`` (no CUPTI here)."""
    if cache is not None:
        cache.zero_()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.profiler.start()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    res = _result([], [start.elapsed_time(end)], "profile-range", 0)
    res["launches_per_call"] = None
    return res


def attribution_call(
    torch: Any, session: Any, fn: Callable[[], Any], backend: str | None = None
) -> tuple[tuple[AttributedLaunch, ...], dict[str, Any] | None]:
    """The session's first, un-timed call (it pays CUPTI's one-time instrumentation of the module
    outside the samples). With a CuptiSession and attribution on, that call runs in a side window
    under :class:`attribution.Attributor`: every activity it issued gets its host stack. Returns
    (attributed launches, a note for the record's ``capture`` meta, None when not attempted)."""
    if not isinstance(session, CuptiSession) or not attribution.enabled():
        fn()
        torch.cuda.synchronize()
        return (), None
    att = attribution.Attributor()
    with att:
        with session.call(side=True):
            fn()
    if att.unavailable is not None:
        return (), {"unavailable": att.unavailable}
    win = session.side_windows[-1]
    try:
        calls = session.captures([win], backend=backend, expect_launches=False)
    except CaptureError as exc:  # the attribution never decides whether the samples are taken
        return (), {"unavailable": f"attributed call refused: {exc}"}
    attributed = attribution.attributed_launches(calls[0].launches if calls else (), att.stacks)
    return attributed, {
        "activities": len(attributed),
        "with_stack": sum(1 for a in attributed if a.frames),
    }


def settle_default() -> float:
    """µs to idle after the L2 flush before a window (``WORKBENCH_SETTLE_US``; default 0)."""
    try:
        return max(0.0, float(os.environ.get("WORKBENCH_SETTLE_US", "0")))
    except ValueError:
        raise CaptureError(
            "WORKBENCH_SETTLE_US must be a number of microseconds", key="WORKBENCH_SETTLE_US"
        ) from None


def sample_loop(
    torch: Any,
    session: Any,
    fns: Sequence[Callable[[], Any]],
    nrep: int,
    cache: Any,
    settle_us: float = 0.0,
    grad_to_none: Sequence[Any] | None = None,
    sampler: ClockSampler | None = None,
) -> None:
    """``nrep`` clean rounds; per round and per fn: [flush + sync + settle] outside, then one window.

    With a CuptiSession a round counts only if none of its windows is contaminated (see
    ``session``); the loop measures more rounds until ``nrep`` are clean, at most ``nrep`` extra,
    and refuses the config beyond that. Partner windows of a contaminated round are marked too, so
    interleaved functions keep equal, paired sample counts. ``sampler`` reads the GPU's clocks once
    before the first window and once after each window, outside it (``capture.clocks``)."""
    if sampler is not None:
        sampler.read()
    settle_ns = int(settle_us * 1000)
    per_round = len(fns)
    cupti = isinstance(session, CuptiSession)
    rounds = 0
    while True:
        if cupti:
            bad_rounds = {i // per_round for i in session.contaminated}
            clean = rounds - len(bad_rounds)
        else:
            clean = rounds
        if clean >= nrep:
            break
        if rounds - clean > nrep:
            why = "; ".join(sorted(set(session.contaminated.values())))
            raise CaptureError(
                f"{len(session.contaminated)} samples were contaminated ({why}); more than "
                f"the {nrep} re-measurements allowed: config refused",
                key="samples",
            )
        for fn in fns:
            if grad_to_none is not None:
                for t in grad_to_none:
                    t.grad = None
            if cache is not None:
                cache.zero_()
                torch.cuda.synchronize()
            if settle_ns:
                # idle so the flush's dirty L2 lines drain before the measured kernel starts
                until = time.perf_counter_ns() + settle_ns
                while time.perf_counter_ns() < until:
                    pass
            with session.call():
                fn()
            if sampler is not None:
                sampler.read()
        rounds += 1
    if cupti:
        for r in {i // per_round for i in session.contaminated}:
            for j in range(r * per_round, (r + 1) * per_round):
                session.contaminated.setdefault(j, "partner of a contaminated sample in its round")


def _self_check(
    torch: Any,
    session: Any,
    fn: Callable[[], Any],
    samples: Sequence[float],
    cache: Any,
    grad_to_none: Sequence[Any] | None,
) -> dict[str, Any] | None:
    """CUPTI vs CUDA events (``selfcheck``) for a CUPTI capture; None for the events fallback."""
    if (
        not isinstance(session, CuptiSession)
        or not samples
        or os.environ.get("WORKBENCH_SELFCHECK", "1") == "0"
    ):
        return None
    events_ms = selfcheck.event_samples_ms(
        torch, fn, selfcheck.check_count(len(samples)), cache, grad_to_none
    )
    return selfcheck.judge(summarize(samples)["median"], events_ms).to_dict()


def benchmark(
    fn: Callable[[], Any],
    *,
    backend: str = "unknown",
    warmup_ms: float = 100.0,
    rep_ms: float = 50.0,
    min_rep: int = 2,
    max_rep: int = 1000,
    initial_rep: int = 5,
    flush_l2: bool = True,
    capture: str = "auto",
    grad_to_none: Sequence[Any] | None = None,
    nodeid: str | None = None,
    params: str | None = None,
    publish: bool = True,
    kernel_filter: str | Sequence[str] | None = None,
    settle_us: float | None = None,
) -> dict[str, Any]:
    """Measure ``fn`` (see the module docstring for keys and semantics)."""
    import torch

    estimate = _estimate_ms(torch, fn, initial_rep)
    nrep = min(max_rep, max(min_rep, int(rep_ms / estimate)))
    _warm_up(torch, [fn], warmup_ms)
    cache = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int, device="cuda") if flush_l2 else None
    if os.environ.get(PROFILE_RANGE_ENV) == "1":
        return _profiled_call(torch, fn, cache)
    _prepare_memory(torch)
    session = open_session(backend, capture=capture)
    sampler = open_sampler(torch)
    try:
        with session:
            # un-timed: pays CUPTI's one-time instrumentation of this module outside the samples, and
            # records which source line issued each activity (attribution)
            attributed, att_note = attribution_call(torch, session, fn, backend)
            sample_loop(
                torch,
                session,
                [fn],
                nrep,
                cache,
                settle_default() if settle_us is None else settle_us,
                grad_to_none,
                sampler,
            )
    finally:
        sampler.close()
    calls = session.captures()
    samples = _samples_of(session, calls, kernel_filter=kernel_filter)
    kept = _kept_windows(session, len(calls))
    calls, samples, kept, discarded = _discard_throttled(sampler, calls, samples, kept)
    peak = int(torch.cuda.memory_stats()["allocated_bytes.all.peak"] // (1024 * 1024))
    check = _self_check(torch, session, fn, samples, cache, grad_to_none) if kernel_filter is None else None
    del cache
    if publish:
        _publish(calls, backend, session.source, nodeid, params, attributed)
    res = _result(calls, samples, session.source, peak, session, check)
    if att_note is not None:
        res.setdefault("capture", {})["attribution"] = att_note
    res["clocks"] = sampler.summary(kept, discarded=discarded)
    return res


def _kept_windows(session: Any, n_calls: int) -> list[int]:
    """Indices (in measurement order) of the windows whose calls the record reports."""
    if isinstance(session, CuptiSession):
        return [i for i in range(len(session.windows)) if i not in session.contaminated]
    return list(range(n_calls))


def _discard_throttled(
    sampler: ClockSampler, calls: list[CallCapture], samples: list[float], kept: list[int]
) -> tuple[list[CallCapture], list[float], list[int], int]:
    """NVBench's discard-on-throttle, only with ``WORKBENCH_DISCARD_THROTTLED=1`` (``capture.clocks``)."""
    if not discard_throttled() or sampler.unavailable is not None:
        return calls, samples, kept, 0
    throttled = set(sampler.throttled_windows(kept))
    if not throttled:
        return calls, samples, kept, 0
    if len(throttled) == len(kept):
        raise CaptureError(
            f"all {len(kept)} measured calls ran while the GPU was throttled and "
            "WORKBENCH_DISCARD_THROTTLED=1 discards them: config refused",
            key="clocks",
        )
    pos = [p for p, w in enumerate(kept) if w not in throttled]
    calls = [
        CallCapture(
            index=k,
            backend=calls[p].backend,
            host_start_ns=calls[p].host_start_ns,
            host_end_ns=calls[p].host_end_ns,
            launches=calls[p].launches,
        )
        for k, p in enumerate(pos)
    ]
    return calls, [samples[p] for p in pos], [kept[p] for p in pos], len(throttled)


def benchmark_pair(
    fn_a: Callable[[], Any],
    fn_b: Callable[[], Any],
    *,
    backends: tuple[str, str] = ("a", "b"),
    warmup_ms: float = 100.0,
    rep_ms: float = 50.0,
    min_rep: int = 2,
    max_rep: int = 1000,
    initial_rep: int = 5,
    flush_l2: bool = True,
    capture: str = "auto",
    nodeid: tuple[str | None, str | None] = (None, None),
    params: str | None = None,
    publish: bool = True,
    settle_us: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure two functions interleaved A B A B in ONE session (drift hits both equally)."""
    import torch

    est = max(_estimate_ms(torch, fn_a, initial_rep), _estimate_ms(torch, fn_b, initial_rep))
    nrep = min(max_rep, max(min_rep, int(rep_ms / est)))
    _warm_up(torch, [fn_a, fn_b], warmup_ms)
    cache = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int, device="cuda") if flush_l2 else None
    _prepare_memory(torch)
    session = open_session(backends[0], capture=capture)
    sampler = open_sampler(torch)
    try:
        with session:
            att_a, note_a = attribution_call(torch, session, fn_a, backends[0])
            att_b, note_b = attribution_call(torch, session, fn_b, backends[1])
            sample_loop(
                torch,
                session,
                [fn_a, fn_b],
                nrep,
                cache,
                settle_default() if settle_us is None else settle_us,
                sampler=sampler,
            )
    finally:
        sampler.close()
    peak = int(torch.cuda.memory_stats()["allocated_bytes.all.peak"] // (1024 * 1024))
    results = []
    for which in (0, 1):
        idx = list(range(which, 2 * nrep, 2))
        if isinstance(session, CuptiSession):
            idx = [i for i in range(which, len(session.windows), 2) if i not in session.contaminated]
            calls = session.captures([session.windows[i] for i in idx], backend=backends[which])
            calls = [
                CallCapture(
                    index=k,
                    backend=c.backend,
                    host_start_ns=c.host_start_ns,
                    host_end_ns=c.host_end_ns,
                    launches=c.launches,
                )
                for k, c in enumerate(calls)
            ]
        else:
            all_calls = session.captures()
            calls = [
                CallCapture(
                    index=k,
                    backend=backends[which],
                    host_start_ns=all_calls[i].host_start_ns,
                    host_end_ns=all_calls[i].host_end_ns,
                    launches=(),
                )
                for k, i in enumerate(idx)
            ]
        samples = _samples_of(session, calls, idx)
        if publish:
            _publish(calls, backends[which], session.source, nodeid[which], params, (att_a, att_b)[which])
        check = _self_check(torch, session, (fn_a, fn_b)[which], samples, cache, None)
        res = _result(calls, samples, session.source, peak, session, check)
        note = (note_a, note_b)[which]
        if note is not None:
            res.setdefault("capture", {})["attribution"] = note
        res["clocks"] = sampler.summary(idx)  # exposure only: a pair keeps its samples paired (no discard)
        results.append(res)
    del cache
    return results[0], results[1]
