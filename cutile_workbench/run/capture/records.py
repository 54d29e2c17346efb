"""Plain raw CUPTI record tuples and their attribution to measured calls (pure, no CUDA).

Contract: the CUPTI callback copies record fields into these NamedTuples (never keeps the record
objects, whose buffers CUPTI reuses). :func:`attribute_calls` turns one session's raw records plus
the ``cupti.get_timestamp()`` window of every measured call into :class:`~cutile_workbench.model.CallCapture`
objects, and refuses the whole sample set with :class:`~cutile_workbench.errors.CaptureError` when a
self-check fails (duplicate correlation ids, GPU work outside its host window, calls without launches).
Everything here runs without a GPU, so the checks are unit-tested on CPU with synthetic records.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import NamedTuple

from cutile_workbench.errors import CaptureError
from cutile_workbench.model import CallCapture, Launch

#: CUPTI ActivityKind values (cupti.h; identical in cupti-python 13.0.1 and 13.4)
KIND_MEMCPY = 1
KIND_MEMSET = 2
KIND_DRIVER = 4
KIND_RUNTIME = 5
KIND_CONCURRENT_KERNEL = 10

#: slack for clock granularity between ``get_timestamp()`` and record timestamps (~32 ns seen)
TIMESTAMP_SLACK_NS = 2_000


class KernelRec(NamedTuple):
    correlation_id: int
    start: int
    end: int
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers_per_thread: int
    static_smem: int
    dynamic_smem: int
    stream_id: int
    graph_id: int
    graph_node_id: int
    cluster: tuple[int, int, int] = (0, 0, 0)  # CUPTI cluster_x/y/z (0s: no cluster launch)


class ApiRec(NamedTuple):
    correlation_id: int
    start: int
    end: int
    cbid: int
    kind: int  # KIND_RUNTIME or KIND_DRIVER
    thread_id: int


class CopyRec(NamedTuple):
    kind: int  # KIND_MEMCPY or KIND_MEMSET
    correlation_id: int
    start: int
    end: int
    bytes: int
    stream_id: int
    copy_kind: str | None  # "DTOD", "HTOD", ... for memcpy; None for memset
    graph_id: int


class Window(NamedTuple):
    """Host window of one measured call, in the CUPTI clock; ``end`` is taken after a device sync."""

    start: int
    end: int


def _check_duplicates(apis: Sequence[ApiRec], kernels: Sequence[KernelRec]) -> None:
    # One API call has one correlation id per API kind; two RUNTIME (or two DRIVER) records with
    # the same id mean a buffer was delivered twice (stale records from a previous session).
    api_dups = [cid for (cid, kind), n in Counter((a.correlation_id, a.kind) for a in apis).items() if n > 1]
    if api_dups:
        raise CaptureError(
            f"duplicate correlation ids in API records ({len(api_dups)}, e.g. {sorted(api_dups)[:3]}): "
            "records from another session leaked in; sample set refused",
            key="correlation_id",
        )
    # Outside CUDA graphs one launch API produces one kernel; graph replays legitimately share ids.
    kdups = [cid for cid, n in Counter(k.correlation_id for k in kernels if not k.graph_id).items() if n > 1]
    if kdups:
        raise CaptureError(
            f"duplicate correlation ids in kernel records ({len(kdups)}, e.g. {sorted(kdups)[:3]}); sample set refused",
            key="correlation_id",
        )


def attribute_calls(
    windows: Sequence[Window],
    kernels: Sequence[KernelRec],
    apis: Sequence[ApiRec],
    copies: Sequence[CopyRec],
    *,
    backend: str,
    api_name: Callable[[ApiRec], str | None] = lambda a: None,
    demangle: Callable[[str], str | None] = lambda n: None,
    expect_launches: bool = True,
    check_duplicates: bool = True,
) -> list[CallCapture]:
    """Attribute GPU records to the calls whose host window holds their launching API record.

    Raises :class:`CaptureError` when a self-check fails; returns one CallCapture per window.
    """
    if check_duplicates:
        _check_duplicates(apis, kernels)
    kernels_by_cid: dict[int, list[KernelRec]] = defaultdict(list)
    for k in kernels:
        kernels_by_cid[k.correlation_id].append(k)
    copies_by_cid: dict[int, list[CopyRec]] = defaultdict(list)
    for c in copies:
        copies_by_cid[c.correlation_id].append(c)

    apis_sorted = sorted(apis, key=lambda a: a.start)
    starts = [a.start for a in apis_sorted]
    import bisect

    demangle_cache: dict[str, str | None] = {}

    def _demangle(name: str) -> str | None:
        if name not in demangle_cache:
            demangle_cache[name] = demangle(name)
        return demangle_cache[name]

    calls: list[CallCapture] = []
    for index, win in enumerate(windows):
        lo = bisect.bisect_left(starts, win.start)
        hi = bisect.bisect_right(starts, win.end)
        launches: list[Launch] = []
        seen: set[int] = set()
        for api in apis_sorted[lo:hi]:
            # a runtime call and the driver call beneath it may share one id: attribute once,
            # named after the outer (earlier) record
            if api.correlation_id in seen:
                continue
            seen.add(api.correlation_id)
            name_of_api = None
            for k in kernels_by_cid.get(api.correlation_id, ()):
                if name_of_api is None:
                    name_of_api = api_name(api)
                _check_inside(k.start, k.end, api, win, index, k.name)
                launches.append(
                    Launch(
                        kind="kernel",
                        name=k.name,
                        start_ns=k.start,
                        end_ns=k.end,
                        correlation_id=k.correlation_id,
                        demangled=_demangle(k.name),
                        grid=k.grid,
                        block=k.block,
                        registers_per_thread=k.registers_per_thread,
                        static_smem=k.static_smem,
                        dynamic_smem=k.dynamic_smem,
                        stream_id=k.stream_id,
                        graph_id=k.graph_id or None,
                        graph_node_id=k.graph_node_id or None,
                        api_name=name_of_api,
                        cluster=k.cluster if any(k.cluster) else None,
                    )
                )
            for c in copies_by_cid.get(api.correlation_id, ()):
                if name_of_api is None:
                    name_of_api = api_name(api)
                label = f"Memcpy {c.copy_kind}" if c.kind == KIND_MEMCPY else "Memset"
                _check_inside(c.start, c.end, api, win, index, label)
                launches.append(
                    Launch(
                        kind="memcpy" if c.kind == KIND_MEMCPY else "memset",
                        name=label,
                        start_ns=c.start,
                        end_ns=c.end,
                        correlation_id=c.correlation_id,
                        stream_id=c.stream_id,
                        graph_id=c.graph_id or None,
                        bytes=c.bytes,
                        copy_kind=c.copy_kind,
                        api_name=name_of_api,
                    )
                )
        launches.sort(key=lambda launch: (launch.start_ns, launch.correlation_id))
        if expect_launches and not launches:
            raise CaptureError(
                f"call {index} of backend '{backend}' produced no GPU activity although launches were "
                "expected (CUPTI not recording, or the function launched nothing); sample set refused",
                key=f"calls[{index}]",
            )
        calls.append(
            CallCapture(
                index=index,
                backend=backend,
                host_start_ns=win.start,
                host_end_ns=win.end,
                launches=tuple(launches),
            )
        )
    return calls


def _check_inside(start: int, end: int, api: ApiRec, win: Window, index: int, what: str) -> None:
    # GPU work cannot start before the host asked for it, nor end after the post-sync timestamp.
    if end < start:
        raise CaptureError(
            f"call {index}: '{what}' ends before it starts ({start}..{end} ns); sample set refused",
            key=f"calls[{index}]",
        )
    if start + TIMESTAMP_SLACK_NS < api.start or end > win.end + TIMESTAMP_SLACK_NS:
        raise CaptureError(
            f"call {index}: '{what}' ran at {start}..{end} ns, outside its host window "
            f"{api.start}..{win.end} ns (clock corrupted, e.g. by another CUPTI client such as "
            "torch.profiler); sample set refused",
            key=f"calls[{index}]",
        )
