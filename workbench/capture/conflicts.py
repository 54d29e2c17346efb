"""Detect another CUPTI client (torch.profiler / Kineto) in this process.

Contract: :func:`active_profiler` returns a human-readable reason when torch's profiler (which
drives Kineto, a CUPTI client) is running now, else None. :func:`kineto_used_in_process` says
whether a Kineto session has run earlier in this process: after one, cupti-python medians were
measured 2.1x wrong on the H200 (docs/gpu.md §3), so the capture refuses to start then too.
Never imports torch itself (no torch → no conflict).
"""

from __future__ import annotations

import sys


def active_profiler() -> str | None:
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.autograd.profiler._is_profiler_enabled:  # set by torch.profiler.profile.__enter__
            return "torch.profiler (Kineto) is active in this process"
    except AttributeError:
        pass
    try:
        if torch._C._autograd._profiler_enabled():
            return "the autograd/Kineto profiler is enabled in this process"
    except (AttributeError, RuntimeError):
        pass
    return None


_FLAG = "_workbench_kineto_seen"


def kineto_used_in_process() -> bool:
    """True when a Kineto session started in this process after :func:`install_tracker` ran."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    return bool(getattr(torch.autograd.profiler, _FLAG, False))


def install_tracker() -> None:
    """Mark Kineto session starts, so later captures know CUPTI state was touched by Kineto.

    torch exposes no "Kineto has run" flag, so we wrap the two entry points that start one:
    ``torch.profiler.profile.start`` and ``torch.autograd.profiler.profile.__enter__``.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return
    for cls, meth in ((torch.profiler.profile, "start"), (torch.autograd.profiler.profile, "__enter__")):
        if getattr(cls, "_workbench_tracked_" + meth, False):
            continue
        original = getattr(cls, meth)

        def wrapper(self, *args, __original=original, **kwargs):
            setattr(torch.autograd.profiler, _FLAG, True)
            return __original(self, *args, **kwargs)

        setattr(cls, meth, wrapper)
        setattr(cls, "_workbench_tracked_" + meth, True)
