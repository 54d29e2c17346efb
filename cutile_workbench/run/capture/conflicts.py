"""Detect another CUPTI client (torch.profiler / Kineto) in this process.

Contract:
- :func:`active_profiler` returns a human-readable reason when torch's profiler (which drives
  Kineto, a CUPTI client) is running now, else None.
- :func:`install_tracker` wraps the entry points that start a Kineto session
  (``torch.profiler.profile.start``, ``torch.autograd.profiler.profile.__enter__``) so that every
  start is counted; :func:`kineto_starts` is that count and :func:`kineto_used_in_process` says
  whether it is non-zero. The pytest plugin installs the tracker before the first test when
  ``--workbench-harness`` is on, so a Kineto session that starts *while* a capture is open (a
  wrapper's autotuner, a test's own profiler) is seen by the capture (``session`` compares the
  count around every window) as well as one that ran before.
- Why it matters: a Kineto session registers its own CUPTI buffer callbacks and its own (TSC)
  timestamp callback. After one, cupti-python records arrive in TSC ticks: every duration read
  2.1x too long on the H200 (docs/gpu.md §3, §6: 817.90 vs 389.63 µs), and Kineto's own teardown
  can leave our activity kinds disabled. ``capture.clock`` detects and undoes the clock part.
Never imports torch itself (no torch → no conflict, nothing to track).
"""

from __future__ import annotations

import sys
import threading

_COUNT_ATTR = "_workbench_kineto_starts"
_lock = threading.Lock()


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


def kineto_starts() -> int:
    """How many Kineto sessions started in this process since :func:`install_tracker` ran."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    return int(getattr(torch.autograd.profiler, _COUNT_ATTR, 0))


def kineto_used_in_process() -> bool:
    """True when a Kineto session started in this process after :func:`install_tracker` ran."""
    return kineto_starts() > 0


def install_tracker() -> bool:
    """Count Kineto session starts from now on (idempotent). False when torch is not imported yet.

    torch exposes no "Kineto has run" flag, so we wrap the two entry points that start one:
    ``torch.profiler.profile.start`` (``__enter__`` calls it) and
    ``torch.autograd.profiler.profile.__enter__`` (the legacy/autograd API).
    """
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    with _lock:
        for cls, meth in ((torch.profiler.profile, "start"), (torch.autograd.profiler.profile, "__enter__")):
            if getattr(cls, "_workbench_tracked_" + meth, False):
                continue
            original = getattr(cls, meth)

            def wrapper(self, *args, __original=original, **kwargs):
                with _lock:
                    setattr(torch.autograd.profiler, _COUNT_ATTR, kineto_starts() + 1)
                return __original(self, *args, **kwargs)

            setattr(cls, meth, wrapper)
            setattr(cls, "_workbench_tracked_" + meth, True)
    return True
