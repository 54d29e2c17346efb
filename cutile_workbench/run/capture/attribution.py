"""Launch attribution: the Python stack of the host call that issued each GPU activity (issue 32).

Contract::

    att = Attributor()                 # one CUPTI callback subscriber ("cutile-workbench-attribution")
    with att:                          # subscribed: launch/copy/set cbids of RUNTIME_API + DRIVER_API only
        with session.call(side=True):  # an un-timed call inside the capture session (never a sample)
            fn()
    # unsubscribed on exit, before any timed sample (a stack costs ~100 µs: cupti.md §2.7)
    records = attributed_launches(call.launches, att.stacks)

At ``API_ENTER`` of each enabled cbid the callback runs on the launching thread and takes
``traceback.extract_stack()``; :func:`keep_frames` keeps the frames of the kernel's own code (the
TileGym tree: ``src/tilegym/...`` and the test files under the run's root) plus the top library
frame they called (e.g. ``torch/nn/functional.py:silu``), innermost first, paths TileGym-relative.
``correlation_id`` of the callback equals the kernel/memcpy/memset record's, which ties a record to
its stack. Frames of the harness itself (``cutile_workbench/run``), pytest, pluggy and the standard
library are dropped.

When the subscriber cannot be had (another CUPTI client holds it: error 39, Nsight, a debugger),
:attr:`Attributor.unavailable` says why and the measurement goes on without attribution: the
attribution never decides whether a sample is taken. ``WORKBENCH_ATTRIBUTION=0`` switches it off.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
import threading
import traceback
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cutile_workbench.model import AttributedLaunch, Launch, SourceFrame

ENV = "WORKBENCH_ATTRIBUTION"
SUBSCRIBER_NAME = "cutile-workbench-attribution"
#: the cbids whose API_ENTER takes a stack: launches, copies, sets (as the activity API filter)
_LAUNCH_APIS = re.compile(r"Launch|Memcpy|Memset")
#: at most this many kept frames per launch (the innermost ones)
MAX_FRAMES = 8

_HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # cutile_workbench/run
_DROP_PARTS = ("/_pytest/", "/pluggy/", "/site-packages/pytest", "<frozen ", "/cutile_workbench/run/")


def enabled() -> bool:
    """``WORKBENCH_ATTRIBUTION`` is not "0" (default on)."""
    return os.environ.get(ENV, "1") != "0"


def _library_prefixes() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    out = {paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    out |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    return tuple(sorted(p.rstrip("/") + "/" for p in out if p))


def tilegym_relative(path: str, roots: Sequence[str]) -> str | None:
    """``…/src/tilegym/x.py`` → ``src/tilegym/x.py``; a file under one of ``roots`` → relative to it;
    anything else → None (not the kernel's own code)."""
    norm = path.replace("\\", "/")
    i = norm.rfind("/src/tilegym/")
    if i >= 0:
        return norm[i + 1 :]
    for root in roots:
        r = root.rstrip("/") + "/"
        if r != "/" and norm.startswith(r):
            return norm[len(r) :]
    return None


def _library_name(path: str, prefixes: Sequence[str]) -> str:
    norm = path.replace("\\", "/")
    for p in prefixes:
        if norm.startswith(p):
            return norm[len(p) :]
    return norm


def keep_frames(
    stack: Sequence[tuple[str, int, str, str]],
    roots: Sequence[str],
    library_prefixes: Sequence[str] = (),
) -> tuple[SourceFrame, ...]:
    """The kept frames of one host stack (``stack``: (file, line, function, code), outermost first,
    as ``traceback.extract_stack`` gives it), innermost first.

    Kept: frames whose file is the kernel's own code (:func:`tilegym_relative`, not under a library
    prefix, not harness/pytest), plus the top library frame called by the innermost such frame."""
    prefixes = tuple(library_prefixes)
    kept: list[SourceFrame] = []
    innermost_own: int | None = None
    marks: list[str | None] = []
    for file, _line, _fn, _code in stack:
        norm = file.replace("\\", "/")
        own = None
        if not any(part in norm for part in _DROP_PARTS):
            own = tilegym_relative(norm, roots)
            if own is not None and "/src/tilegym/" not in norm and any(norm.startswith(p) for p in prefixes):
                own = None  # an installed package under the root (a venv inside the checkout)
        marks.append(own)
    for i, own in enumerate(marks):
        if own is not None:
            innermost_own = i
    if innermost_own is None:
        return ()
    for i in range(innermost_own, -1, -1):
        own = marks[i]
        if own is None:
            continue
        file, line, fn, code = stack[i]
        kept.append(SourceFrame(own, int(line), fn, (code or "").strip()))
        if len(kept) >= MAX_FRAMES:
            break
    if innermost_own + 1 < len(stack):
        file, line, fn, code = stack[innermost_own + 1]
        norm = file.replace("\\", "/")
        if not any(part in norm for part in _DROP_PARTS):
            kept.insert(
                0, SourceFrame(_library_name(norm, prefixes), int(line), fn, (code or "").strip(), True)
            )
    return tuple(kept)


def attributed_launches(
    launches: Iterable[Launch], stacks: Mapping[int, tuple[SourceFrame, ...]]
) -> tuple[AttributedLaunch, ...]:
    """One :class:`AttributedLaunch` per activity of the attributed call (no stack: empty frames)."""
    return tuple(
        AttributedLaunch(
            kind=x.kind,
            name=x.display_name,
            correlation_id=x.correlation_id,
            frames=stacks.get(x.correlation_id, ()),
            api_name=x.api_name,
            grid=x.grid,
            block=x.block,
            cluster=x.cluster,
        )
        for x in launches
    )


def default_roots() -> tuple[str, ...]:
    """Where the kernel's own code lives besides ``src/tilegym``: ``$TILEGYM_PATH`` and the cwd
    (pytest runs from the TileGym checkout)."""
    roots = [os.getcwd()]
    tg = os.environ.get("TILEGYM_PATH")
    if tg:
        roots.insert(0, os.path.abspath(tg))
    return tuple(roots)


class Attributor:
    """The callback subscriber of the module contract (a context manager; re-usable, not nested)."""

    def __init__(self, roots: Sequence[str] | None = None) -> None:
        self.roots = tuple(roots) if roots is not None else default_roots()
        self.stacks: dict[int, tuple[SourceFrame, ...]] = {}
        self.unavailable: str | None = None
        self.taken = 0
        self._sub: Any = None
        self._cupti: Any = None
        self._lock = threading.Lock()
        self._prefixes = _library_prefixes()
        self._enter_site: int | None = None

    def _callback(self, userdata: Any, domain: Any, cbid: Any, cbdata: Any) -> None:
        try:
            if cbdata.callback_site != self._enter_site:
                return
            raw = traceback.extract_stack()[:-1]
            stack = [(f.filename, f.lineno or 0, f.name, f.line or "") for f in raw]
            frames = keep_frames(stack, self.roots, self._prefixes)
            with self._lock:
                self.stacks[int(cbdata.correlation_id)] = frames
                self.taken += 1
        except Exception:  # never break the launch the callback sits in
            return

    def __enter__(self) -> Attributor:
        self.stacks = {}
        try:
            from cupti import cupti
        except Exception as exc:
            self.unavailable = f"cupti-python unavailable: {exc}"
            return self
        self._cupti = cupti
        self._enter_site = int(cupti.ApiCallbackSite.API_ENTER)
        try:
            params = cupti.SubscriberParams()
            params.struct_size = cupti.SUBSCRIBER_PARAMS_SIZE
            params.subscriber_name = SUBSCRIBER_NAME
            try:
                self._sub = cupti.subscribe_v2(self._callback, None, params.ptr)
            except Exception as exc:
                holder = getattr(params, "old_subscriber_name", None)
                self.unavailable = f"CUPTI callback subscriber refused ({exc})" + (
                    f"; held by {holder!r}" if holder else ""
                )
                self._sub = None
                return self
            for domain, enum_name in (
                (cupti.CallbackDomain.RUNTIME_API, "runtime_api_trace_cbid"),
                (cupti.CallbackDomain.DRIVER_API, "driver_api_trace_cbid"),
            ):
                for member in getattr(cupti, enum_name):
                    if member.name in ("INVALID", "SIZE", "FORCE_INT") or not _LAUNCH_APIS.search(
                        member.name
                    ):
                        continue
                    try:
                        cupti.enable_callback(1, self._sub, int(domain), int(member))
                    except Exception:  # cbids this libcupti does not know
                        continue
        except Exception as exc:
            self.unavailable = f"CUPTI callback set-up failed: {exc}"
            self._unsubscribe()
        return self

    def _unsubscribe(self) -> None:
        if self._sub is not None and self._cupti is not None:
            try:
                self._cupti.unsubscribe(self._sub)
            finally:
                self._sub = None

    def __exit__(self, *exc: object) -> None:
        self._unsubscribe()
