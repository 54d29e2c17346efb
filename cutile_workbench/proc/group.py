"""Stopping a child that runs in its own session (``start_new_session=True``): its whole process group.

Contract:
- :func:`kill_group` sends SIGTERM to the group, waits up to ``grace_s`` for the leader, SIGKILLs the
  group if the leader outlived it (then waits ``kill_wait_s``, None = until it is gone), and finally
  SIGKILLs whatever is left of the group — members that ignore SIGTERM (pytest's own children,
  autotune watchdogs, compilers) must not outlive the leader and keep a GPU or the pipes busy.
  Returns what it took (``"SIGTERM"`` or ``"SIGTERM, then SIGKILL after 2.0s"``). A group that is
  already gone, or not ours to signal, is not an error.
- :func:`kill_groups` does the same for several children with ONE shared grace period (a
  cancelled sharded run stops every shard at once, not one grace period per shard).
- :func:`reap_group` SIGKILLs the stray members of a group whose leader has exited.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def reap_group(pid: int) -> None:
    """SIGKILL what is left of process group ``pid`` (no-op when it is gone)."""
    _signal_group(pid, signal.SIGKILL)


def kill_group(proc: subprocess.Popen[Any], grace_s: float, *, kill_wait_s: float | None = None) -> str:
    """SIGTERM ``proc``'s group, SIGKILL after ``grace_s``; returns what it took."""
    return kill_groups([proc], grace_s, kill_wait_s=kill_wait_s)[0]


def kill_groups(
    procs: Sequence[subprocess.Popen[Any]], grace_s: float, *, kill_wait_s: float | None = None
) -> list[str]:
    """:func:`kill_group` for every child in ``procs``, with one shared ``grace_s`` deadline."""
    for proc in procs:
        _signal_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    hows: list[str] = []
    for proc in procs:
        how = "SIGTERM"
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            how = f"SIGTERM, then SIGKILL after {grace_s:.1f}s"
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=kill_wait_s)
        reap_group(proc.pid)
        hows.append(how)
    return hows
