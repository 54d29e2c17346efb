"""proc.group: the one process-group kill (real child processes in their own sessions, no GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest

from cutile_workbench.proc import group
from cutile_workbench.proc.group import kill_group, kill_groups

# a leader that ignores SIGTERM, with a grandchild that ignores it too (pytest's children do)
_STUBBORN = (
    "import os, signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
    "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)']); "
    "print(child.pid, flush=True); time.sleep(60)"
)


def _spawn(code: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it no longer runs
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def _gone_soon(pid: int, cap_s: float = 60.0) -> bool:
    """Wait for ``pid`` to stop running; the cap only ends a hung test, it is not the claim."""
    deadline = time.monotonic() + cap_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


class _Clock:
    """An injected ``time`` for proc.group: ``monotonic()`` moves only when a child's wait "waits"."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


def test_a_leader_that_ignores_sigterm_is_killed_with_its_group() -> None:
    proc = _spawn(_STUBBORN)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    how = kill_group(proc, 0.3)
    assert how == "SIGTERM, then SIGKILL after 0.3s"
    assert proc.returncode is not None
    assert _gone_soon(grandchild)  # re-parented and reaped by init: a state to wait for, not a time


def test_a_polite_leader_stops_on_sigterm_and_a_dead_group_is_no_error() -> None:
    proc = _spawn("import time; time.sleep(60)")
    assert kill_group(proc, 5.0) == "SIGTERM"
    assert kill_group(proc, 0.1) == "SIGTERM"  # already gone: nothing to signal, no exception


def test_several_children_share_one_grace_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """One deadline for all: the first stubborn child's wait uses the whole grace, the others get 0 s.

    The clock is injected (each wait advances it by the time it was given), so the claim is about the
    waits asked for, not about how fast this box is; the children and the kills are real."""
    clock = _Clock()
    monkeypatch.setattr(group, "time", clock)
    procs = [_spawn(_STUBBORN) for _ in range(3)]
    asked: list[list[float | None]] = [[] for _ in procs]
    for i, p in enumerate(procs):
        assert p.stdout is not None
        p.stdout.readline()
        real_wait = p.wait

        def wait(timeout: float | None = None, *, _i: int = i, _real: Any = real_wait) -> int:
            asked[_i].append(timeout)
            if timeout is not None:
                clock.now += timeout
            # the real wait, but never on the box's time: 0 s for the grace, unbounded after SIGKILL
            return int(_real(timeout=None if timeout is None else 0))

        monkeypatch.setattr(p, "wait", wait)
    hows = kill_groups(procs, 0.5, kill_wait_s=None)
    assert hows == ["SIGTERM, then SIGKILL after 0.5s"] * 3
    # the grace waits: 0.5 s for the first, then what is left of the same deadline (nothing)
    assert [a[0] for a in asked] == [0.5, 0.0, 0.0]
    assert all(p.returncode is not None for p in procs)
