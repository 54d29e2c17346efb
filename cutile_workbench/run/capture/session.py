"""Capture sessions: one CUPTI (or CUDA-events) session spanning many measured calls.

Contract::

    with open_session("cutile", capture="auto") as s:   # CuptiSession or EventsSession
        fn()                       # un-windowed calls (warm-up) are never attributed
        for _ in range(n):
            flush_l2()             # outside the window
            with s.call():
                fn()
    calls = s.captures()           # list[CallCapture]; raises CaptureError on a failed self-check
    s.source                       # "cupti" | "events" (events: no launch data, device time only)

The CUPTI session (cupti-python 13.0.1): CONCURRENT_KERNEL (never KERNEL), RUNTIME + DRIVER
(filtered to launch/copy/set APIs unless ``WORKBENCH_CUPTI_APIS=all``), MEMCPY, MEMSET; callbacks are re-registered at every session start (Kineto may own them); each
call's window is ``[get_timestamp(), sync, get_timestamp()]``; exit does ``synchronize`` then
``activity_flush_all(1)``; dropped records refuse the sample set. By default the kinds stay enabled
after exit (``keep_enabled``; ``WORKBENCH_CUPTI_KEEP_ENABLED=0`` disables them at every exit).
Window mode (``WORKBENCH_CUPTI_WINDOW``, default ``per_call``): ``per_call`` enables
CONCURRENT_KERNEL right before each window and, after it, does a forced flush and disables it again
(the API/copy kinds stay on for the whole session), which is what a per-sample torch.profiler
session (TileGym's ``benchmark_fn_cupti``) does to CUPTI; ``session`` keeps every kind on across all
windows. On the H200 (bench/median_offset.py, bench/harness_cost.py) the two protocols differ by
~0.3 µs per kernel, for Kineto itself as much as for us, and only the combination "kernel kind
re-enabled after a forced flush" reproduces TileGym's medians (≤ 1.05 % off; a flush alone, a
toggle alone or a non-forced flush leave the +0.3 µs). It costs a forced flush per sample: warm
0.48-0.52x TileGym's time where ``session`` takes 0.19-0.20x. Finer knobs for such measurements:
``WORKBENCH_CUPTI_PER_CALL_KINDS`` = kernel (default) | all | none and
``WORKBENCH_CUPTI_PER_CALL_FLUSH`` = forced (default) | completed | none.

One CUPTI client per process (``conflicts``, ``clock``): a session refuses to start while
torch.profiler is active, or while another CuptiSession of this process is open. At every start,
and before any window after a Kineto session started, it re-arms: callbacks re-registered, the
kinds it enables switched off and on again (Kineto's teardown can leave them off while our
bookkeeping says on), and CUPTI's clock checked against the wall clock (``clock.ensure_clock``:
Kineto's TSC timestamp callback made every duration 2.1x on the H200), restoring CUPTI's own
clock when it was replaced; a clock that cannot be restored refuses the capture. A window during
which a Kineto session started, or inside which an autotuner timed configs (``call(side=True)``
while a window is open), is **contaminated**: kept out of :meth:`captures` (``contaminated`` says
why) so the harness re-measures that sample. ``call(side=True)`` windows are the autotuner's: never
samples, always closed by a forced flush so their records can be read at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import threading
from collections.abc import Iterator
from typing import Any

from cutile_workbench.artifacts.demangle import demangle
from cutile_workbench.errors import CaptureError
from cutile_workbench.model import CallCapture
from cutile_workbench.run.capture import clock, conflicts
from cutile_workbench.run.capture.records import (
    KIND_CONCURRENT_KERNEL,
    KIND_DRIVER,
    KIND_MEMCPY,
    KIND_MEMSET,
    KIND_RUNTIME,
    ApiRec,
    CopyRec,
    KernelRec,
    Window,
    attribute_calls,
)

_KINDS = (KIND_CONCURRENT_KERNEL, KIND_RUNTIME, KIND_DRIVER, KIND_MEMCPY, KIND_MEMSET)
#: kinds a session of this process has enabled and not disabled yet (kept on between keep_enabled
#: sessions: re-enabling CONCURRENT_KERNEL per session re-instruments every loaded module, which
#: dominated the per-session cost on the H200)
_LEFT_ENABLED: set[int] = set()


#: WORKBENCH_CUPTI_APIS=launch (default): RUNTIME + DRIVER stay enabled, but every cbid whose name
#: is not a launch/copy/set API is switched off per cbid. Every API record costs Python-side
#: conversion at the flush: 33 records/sample with all APIs vs 4 with this filter on the H200
#: (flush 153 ms vs 43 ms per 100 samples). "all" records every runtime/driver API call.
_LAUNCH_APIS = re.compile(r"Launch|Memcpy|Memset")
_API_FILTER_ON: set[str] = set()
#: the Kineto start count our kind bookkeeping (_LEFT_ENABLED, _API_FILTER_ON) is valid for
_BOOKKEEPING_AT_KINETO = [0]
#: the CuptiSession open in this process, if any (one CUPTI client at a time)
_ACTIVE: list[CuptiSession] = []


def active_session() -> CuptiSession | None:
    """The CuptiSession currently open in this process (e.g. for a routed autotuner), else None."""
    return _ACTIVE[-1] if _ACTIVE else None


def _choice(var: str, allowed: tuple[str, ...]) -> str:
    """``$var`` or its default (the first of ``allowed``); anything else is a CaptureError."""
    value = os.environ.get(var, allowed[0])
    if value not in allowed:
        raise CaptureError(f"{var} must be one of {', '.join(allowed)}; got {value!r}", key=var)
    return value


def _api_mode() -> str:
    return _choice("WORKBENCH_CUPTI_APIS", ("launch", "all"))


def _set_launch_api_filter(cupti: Any, on: bool) -> int:
    """``on``: keep RUNTIME/DRIVER records only for launch/copy/set cbids (all others disabled per
    cbid; the kinds themselves stay enabled: per-cbid enables without the kind record nothing, as
    seen on the H200). ``on=False`` re-enables every cbid. Returns how many cbids were switched off."""
    n = 0
    for enum_name, fn_name in (
        ("runtime_api_trace_cbid", "activity_enable_runtime_api"),
        ("driver_api_trace_cbid", "activity_enable_driver_api"),
    ):
        enum, setter = getattr(cupti, enum_name), getattr(cupti, fn_name)
        for member in enum:
            if member.name in ("INVALID", "SIZE", "FORCE_INT") or _LAUNCH_APIS.search(member.name):
                continue
            try:
                setter(int(member), 0 if on else 1)
                n += 1
            except Exception:  # cbids a given libcupti does not know: skip them
                continue
    return n


def _window_mode() -> str:
    return _choice("WORKBENCH_CUPTI_WINDOW", ("per_call", "session"))


def _keep_enabled_default() -> bool:
    return os.environ.get("WORKBENCH_CUPTI_KEEP_ENABLED", "1") != "0"


_BUFFER_BYTES = 8 << 20
# Kineto-style names for copies, so kernel_times rows read like TileGym's (key_averages keys)
_COPY_NAMES = {"DTOD": "DtoD", "HTOD": "HtoD", "DTOH": "DtoH", "HTOH": "HtoH", "PTOP": "PtoP"}


def cupti_available() -> str | None:
    """None when cupti-python imports and a CUDA torch is present; else the reason it cannot run."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    try:
        from cupti import cupti  # noqa: F401
    except Exception as exc:  # cupti-python raises several types when libcupti is missing
        return f"cupti-python unavailable: {exc}"
    return None


class _SessionBase:
    source = "events"

    def __init__(self, backend: str, *, expect_launches: bool = True) -> None:
        self.backend = backend
        self.expect_launches = expect_launches
        self._torch: Any = None

    def __enter__(self) -> _SessionBase:
        import torch

        self._torch = torch
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        raise NotImplementedError
        yield

    def captures(self) -> list[CallCapture]:
        raise NotImplementedError


class EventsSession(_SessionBase):
    """Last resort: CUDA events around each call; device time only, **no launch data**."""

    source = "events"

    def __enter__(self) -> EventsSession:
        super().__enter__()
        self._pairs: list[tuple[Any, Any, int, int]] = []
        return self

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        torch = self._torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        import time

        t0 = time.perf_counter_ns()
        start.record()
        yield
        end.record()
        torch.cuda.synchronize()
        self._pairs.append((start, end, t0, time.perf_counter_ns()))

    def captures(self) -> list[CallCapture]:
        return [
            CallCapture(index=i, backend=self.backend, host_start_ns=t0, host_end_ns=t1, launches=())
            for i, (_s, _e, t0, t1) in enumerate(self._pairs)
        ]

    def elapsed_ms(self) -> list[float]:
        return [float(s.elapsed_time(e)) for s, e, _a, _b in self._pairs]


class CuptiSession(_SessionBase):
    """cupti-python activity session; see the module docstring for the protocol and checks."""

    source = "cupti"

    def __init__(
        self,
        backend: str,
        *,
        expect_launches: bool = True,
        keep_enabled: bool | None = None,
        window_mode: str | None = None,
    ) -> None:
        super().__init__(backend, expect_launches=expect_launches)
        self.window_mode = _window_mode() if window_mode is None else window_mode
        # keep_enabled: leave the activity kinds on after exit so the next session starts cheaply
        # (records made between sessions are drained and dropped at the next session start)
        self.keep_enabled = _keep_enabled_default() if keep_enabled is None else keep_enabled
        self._lock = threading.Lock()
        self.kernels: list[KernelRec] = []
        self.apis: list[ApiRec] = []
        self.copies: list[CopyRec] = []
        self.windows: list[Window] = []
        #: windows of ``call(side=True)`` (an autotuner's timing calls): never samples
        self.side_windows: list[Window] = []
        #: index in ``windows`` -> why that sample is not valid (re-measured by the harness)
        self.contaminated: dict[int, str] = {}
        #: every clock check of this session (the first at start, one per re-arm after Kineto)
        self.clock_checks: list[clock.ClockCheck] = []
        self.rearms = 0
        self.dropped = 0
        self._collecting = False
        self._open = False
        self._depth = 0
        self._side_in_window = False
        self._armed_kineto = 0
        self._api_names: dict[tuple[int, int], str | None] = {}

    # -- CUPTI callbacks: keep short, copy fields into tuples (the buffers are reused)
    def _on_request(self) -> tuple[int, int]:
        return _BUFFER_BYTES, 0

    def _on_complete(self, records: list[Any]) -> None:
        if not self._collecting:
            return  # stale records of an earlier session: drop them here, never attribute them
        kernels, apis, copies = [], [], []
        for r in records:
            kind = r.kind
            if kind == KIND_CONCURRENT_KERNEL:
                kernels.append(
                    KernelRec(
                        r.correlation_id,
                        r.start,
                        r.end,
                        r.name,
                        (r.grid_x, r.grid_y, r.grid_z),
                        (r.block_x, r.block_y, r.block_z),
                        r.registers_per_thread,
                        r.static_shared_memory,
                        r.dynamic_shared_memory,
                        r.stream_id,
                        r.graph_id,
                        r.graph_node_id,
                        (
                            getattr(r, "cluster_x", 0) or 0,
                            getattr(r, "cluster_y", 0) or 0,
                            getattr(r, "cluster_z", 0) or 0,
                        ),
                    )
                )
            elif kind in (KIND_RUNTIME, KIND_DRIVER):
                apis.append(ApiRec(r.correlation_id, r.start, r.end, r.cbid, kind, r.thread_id))
            elif kind == KIND_MEMCPY:
                copies.append(
                    CopyRec(
                        kind,
                        r.correlation_id,
                        r.start,
                        r.end,
                        r.bytes,
                        r.stream_id,
                        _memcpy_kind(r.copy_kind),
                        r.graph_id,
                    )
                )
            elif kind == KIND_MEMSET:
                copies.append(
                    CopyRec(kind, r.correlation_id, r.start, r.end, r.bytes, r.stream_id, None, r.graph_id)
                )
        with self._lock:
            self.kernels.extend(kernels)
            self.apis.extend(apis)
            self.copies.extend(copies)

    @property
    def clock(self) -> clock.ClockCheck | None:
        """The last clock check (the one the latest windows were measured under)."""
        return self.clock_checks[-1] if self.clock_checks else None

    def __enter__(self) -> CuptiSession:
        reason = conflicts.active_profiler()
        if reason:
            raise CaptureError(
                f"refusing to start a CUPTI capture: {reason}; never run both in one "
                "process (use the torch.profiler fallback in its own process)"
            )
        if _ACTIVE:
            raise CaptureError(
                "refusing to start a CUPTI capture: another capture is open in this process "
                f"(backend {_ACTIVE[-1].backend!r}); one CUPTI client at a time"
            )
        super().__enter__()
        conflicts.install_tracker()
        from cupti import cupti

        self._cupti = cupti
        self._torch.cuda.synchronize()
        self._kinds: tuple[int, ...] = _KINDS
        self._per_call_kinds: tuple[int, ...] = ()
        self._per_call_flush: int | None = None
        if self.window_mode == "per_call":
            # which kinds are toggled per window and how each window ends (module docstring)
            toggled = _choice("WORKBENCH_CUPTI_PER_CALL_KINDS", ("kernel", "all", "none"))
            self._per_call_kinds = {"kernel": (KIND_CONCURRENT_KERNEL,), "none": (), "all": self._kinds}[
                toggled
            ]
            ending = _choice("WORKBENCH_CUPTI_PER_CALL_FLUSH", ("forced", "completed", "none"))
            self._per_call_flush = {"forced": 1, "completed": 0, "none": None}[ending]
        self._arm(first=True)
        _ACTIVE.append(self)
        self._open = True
        return self

    def _arm(self, *, first: bool) -> None:
        """(Re-)take CUPTI: callbacks, kinds, API filter, clock. Raises CaptureError on a bad clock."""
        cupti = self._cupti
        self._collecting = False
        # Re-register at every (re-)arm: whoever registered last (e.g. Kineto) gets all buffers.
        cupti.activity_register_callbacks(self._on_request, self._on_complete)
        cupti.activity_flush_all(1)  # drain leftovers while _collecting is False
        if first:
            self._reset_dropped_baseline()
        seen = conflicts.kineto_starts()
        if seen != _BOOKKEEPING_AT_KINETO[0]:
            # A Kineto session ran since our bookkeeping was made: its teardown may have disabled
            # what we think is on. Switch every kind we use off, then on again below.
            for k in self._kinds:
                with contextlib.suppress(Exception):
                    cupti.activity_disable(k)
            _LEFT_ENABLED.clear()
            _API_FILTER_ON.clear()
            _BOOKKEEPING_AT_KINETO[0] = seen
        self._armed_kineto = seen
        if self.window_mode == "per_call":
            # enabled per window only (see call()); switch off what an earlier session left on
            for k in [k for k in self._per_call_kinds if k in _LEFT_ENABLED]:
                cupti.activity_disable(k)
                _LEFT_ENABLED.discard(k)
            for k in self._kinds:
                if k not in self._per_call_kinds and k not in _LEFT_ENABLED:
                    cupti.activity_enable(k)
                    _LEFT_ENABLED.add(k)
        else:
            for k in self._kinds:
                if k not in _LEFT_ENABLED:
                    cupti.activity_enable(k)
                    _LEFT_ENABLED.add(k)
        want = _api_mode() == "launch"
        if want != ("launch" in _API_FILTER_ON):
            _set_launch_api_filter(cupti, want)
            (_API_FILTER_ON.add if want else _API_FILTER_ON.discard)("launch")
        check = clock.ensure_clock(cupti.get_timestamp)
        self.clock_checks.append(check)
        if not check.ok:
            self._collecting = False
            raise CaptureError(f"refusing to measure: {check.reason}", key="cupti_clock")
        self._collecting = True

    def __exit__(self, *exc: object) -> None:
        if not self._open:
            return
        cupti = self._cupti
        try:
            self._torch.cuda.synchronize()  # kernel records exist only once kernels finished
        finally:
            try:
                self._flush(cupti)
            finally:
                if not self.keep_enabled:
                    # per_call's toggled kinds are off already: _LEFT_ENABLED holds what is still on
                    for k in [k for k in self._kinds if k in _LEFT_ENABLED]:
                        cupti.activity_disable(k)
                        _LEFT_ENABLED.discard(k)
                    if "launch" in _API_FILTER_ON:
                        _set_launch_api_filter(cupti, False)
                        _API_FILTER_ON.discard("launch")
                self._collecting = False
                self._open = False
                if self in _ACTIVE:
                    _ACTIVE.remove(self)
        self.dropped = self._dropped_now() - self._dropped_base

    def _flush(self, cupti: Any) -> None:
        # "forced" (default) delivers every buffer; "complete" (WORKBENCH_CUPTI_FLUSH=complete) only
        # buffers whose records are all complete, which is cheaper, and falls back to a forced flush
        # when the last window's GPU records have not arrived yet.
        if os.environ.get("WORKBENCH_CUPTI_FLUSH", "forced") != "complete" or not self.windows:
            cupti.activity_flush_all(1)
            return
        cupti.activity_flush_all(0)
        last = self.windows[-1]
        with self._lock:
            cids = {a.correlation_id for a in self.apis if last.start <= a.start <= last.end}
            arrived = any(k.correlation_id in cids for k in self.kernels) or any(
                c.correlation_id in cids for c in self.copies
            )
        if not arrived:
            cupti.activity_flush_all(1)

    def _dropped_now(self) -> int:
        dropped = ctypes.c_size_t(0)
        try:
            self._cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(dropped))
        except Exception:
            return 0
        return int(dropped.value)

    def _reset_dropped_baseline(self) -> None:
        self._dropped_base = self._dropped_now()

    @property
    def in_window(self) -> bool:
        return self._depth > 0

    @property
    def last_window_contaminated(self) -> bool:
        return bool(self.windows) and (len(self.windows) - 1) in self.contaminated

    def clean_windows(self) -> list[Window]:
        return [w for i, w in enumerate(self.windows) if i not in self.contaminated]

    @contextlib.contextmanager
    def call(self, *, side: bool = False) -> Iterator[None]:
        """One measured window (``side``: an autotuner's timing call, see the module docstring)."""
        if self._depth:
            if not side:
                raise CaptureError("nested measured windows in one capture", key="window")
            with self._inner_side_call():
                yield
            return
        if conflicts.kineto_starts() != self._armed_kineto:
            # Kineto took CUPTI since the last window: records of earlier windows may have gone to
            # its callbacks, so those samples are re-measured too.
            for i in range(len(self.windows)):
                self.contaminated.setdefault(
                    i, "measured before a torch.profiler (Kineto) session took CUPTI"
                )
            self.rearms += 1
            self._arm(first=False)
        cupti = self._cupti
        get_ts, sync = cupti.get_timestamp, self._torch.cuda.synchronize
        per_call = self.window_mode == "per_call"
        if per_call:
            for k in self._per_call_kinds:
                cupti.activity_enable(k)
        kineto_before = conflicts.kineto_starts()
        self._depth = 1
        self._side_in_window = False
        t0 = get_ts()
        try:
            yield
            sync()
            win = Window(t0, get_ts())
            if side:
                self.side_windows.append(win)
            else:
                self.windows.append(win)
                idx = len(self.windows) - 1
                if conflicts.kineto_starts() != kineto_before:
                    self.contaminated[idx] = "a torch.profiler (Kineto) session started during this call"
                elif self._side_in_window:
                    self.contaminated[idx] = "an autotuner timed its configs inside this call"
        finally:
            self._depth = 0
            if per_call:
                if self._per_call_flush is not None:  # before disabling, as a torch.profiler exit does
                    cupti.activity_flush_all(self._per_call_flush)
                for k in self._per_call_kinds:
                    cupti.activity_disable(k)
            if side and not (per_call and self._per_call_flush == 1):
                cupti.activity_flush_all(1)  # a side window's records are read right away

    @contextlib.contextmanager
    def _inner_side_call(self) -> Iterator[None]:
        # inside an open window: the kinds are on already; only bracket, sync and deliver records
        self._side_in_window = True
        get_ts = self._cupti.get_timestamp
        t0 = get_ts()
        yield
        self._torch.cuda.synchronize()
        self.side_windows.append(Window(t0, get_ts()))
        self._cupti.activity_flush_all(1)

    def api_name(self, api: ApiRec) -> str | None:
        key = (api.kind, api.cbid)
        if key not in self._api_names:
            cupti = self._cupti
            domain = (
                cupti.CallbackDomain.RUNTIME_API
                if api.kind == KIND_RUNTIME
                else cupti.CallbackDomain.DRIVER_API
            )
            try:
                name = cupti.get_callback_name(domain, api.cbid)
            except Exception:
                name = None
            self._api_names[key] = str(name) if name is not None else None
        return self._api_names[key]

    def captures(
        self,
        windows: list[Window] | None = None,
        backend: str | None = None,
        expect_launches: bool | None = None,
    ) -> list[CallCapture]:
        """Calls of ``windows`` (default: the clean measured windows, contaminated ones left out)."""
        if self.dropped:
            raise CaptureError(
                f"CUPTI dropped {self.dropped} activity records (buffers too small or "
                "flushed late); sample set refused",
                key="dropped_records",
            )
        with self._lock:
            kernels, apis, copies = list(self.kernels), list(self.apis), list(self.copies)
        return attribute_calls(
            self.clean_windows() if windows is None else windows,
            kernels,
            apis,
            copies,
            backend=backend or self.backend,
            api_name=self.api_name,
            demangle=demangle,
            expect_launches=self.expect_launches if expect_launches is None else expect_launches,
        )

    def capture_meta(self) -> dict[str, Any]:
        """What a record says about how it was captured (window mode, clock, re-measured samples)."""
        meta: dict[str, Any] = {"window": self.window_mode}
        if self.clock is not None:
            meta["clock"] = self.clock.to_dict()
        if self.contaminated:
            meta["discarded_samples"] = len(self.contaminated)
            meta["discarded_why"] = sorted(set(self.contaminated.values()))
        if self.rearms:
            meta["rearms"] = self.rearms
        return meta


def _memcpy_kind(code: int) -> str | None:
    try:
        from cupti import cupti

        raw = cupti.ActivityMemcpyKind(code).name
    except Exception:
        return None
    return _COPY_NAMES.get(raw, raw)


def open_session(backend: str, *, capture: str = "auto", expect_launches: bool = True) -> _SessionBase:
    """``capture``: "cupti" (must work), "events" (no launch data) or "auto" (cupti, else events)."""
    if capture not in ("auto", "cupti", "events"):
        raise CaptureError(f"unknown capture mode {capture!r} (auto|cupti|events)", key="capture")
    if capture == "events":
        return EventsSession(backend, expect_launches=expect_launches)
    reason = cupti_available()
    if reason is None:
        return CuptiSession(backend, expect_launches=expect_launches)
    if capture == "cupti":
        raise CaptureError(f"CUPTI capture requested but {reason}", key="capture")
    return EventsSession(backend, expect_launches=expect_launches)
