"""proc.group: the one process-group kill (real child processes in their own sessions, no GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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


def test_a_leader_that_ignores_sigterm_is_killed_with_its_group() -> None:
    proc = _spawn(_STUBBORN)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    how = kill_group(proc, 0.3)
    assert how == "SIGTERM, then SIGKILL after 0.3s"
    assert proc.returncode is not None
    for _ in range(50):  # the grandchild is re-parented and reaped by init: give it a moment
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_a_polite_leader_stops_on_sigterm_and_a_dead_group_is_no_error() -> None:
    proc = _spawn("import time; time.sleep(60)")
    assert kill_group(proc, 5.0) == "SIGTERM"
    assert kill_group(proc, 0.1) == "SIGTERM"  # already gone: nothing to signal, no exception


def test_several_children_share_one_grace_period() -> None:
    procs = [_spawn(_STUBBORN) for _ in range(3)]
    for p in procs:
        assert p.stdout is not None
        p.stdout.readline()
    t0 = time.monotonic()
    hows = kill_groups(procs, 0.5)
    assert hows == ["SIGTERM, then SIGKILL after 0.5s"] * 3
    assert time.monotonic() - t0 < 3 * 0.5  # one shared deadline, not 0.5 s per child
    assert all(p.returncode is not None for p in procs)
