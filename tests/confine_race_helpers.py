"""The check-then-open race harnesses of issue 33 §4 (``tests/unit/test_confine_race.py`` and
``bench/confine_race.py`` run them): a thread swaps a dir of a kernel dir with a link out (and back) in
a bounded loop while the main thread writes.

SYNTHETIC trees under the caller's temp dir (the race is about the file system, not about the data).
Each harness returns (escapes, refusals, written); an *escape* is any byte, temp file or dir that
lands in the outside dir. Both share one swap loop (:func:`swapping`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

from cutile_workbench.errors import UnsafePath, WorkbenchError
from cutile_workbench.infra.atomicio import atomic_write_bytes


@contextlib.contextmanager
def swapping(real: Path, target: Path) -> Iterator[None]:
    """While the body runs, a thread swaps the dir ``real`` with a link to ``target`` and back, over and
    over (``<real>.link`` holds the link, ``<real>.parked`` the dir while the link is in place). On exit
    the thread is stopped and joined; it must have swapped at least once (else the race was not run)."""
    link, parked = real.with_name(real.name + ".link"), real.with_name(real.name + ".parked")
    os.symlink(target, link)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            try:
                os.rename(real, parked)  # the real dir aside, the link in its place …
                os.rename(link, real)
                os.rename(real, link)  # … and back
                os.rename(parked, real)
                swaps += 1
            except OSError:  # a step failed half-way: put each entry back in its place, go on
                with contextlib.suppress(OSError):
                    if real.is_symlink() and not os.path.lexists(link):
                        os.rename(real, link)  # the link stayed in the real dir's place
                    if parked.is_dir() and real.is_dir() and not real.is_symlink():
                        shutil.rmtree(real, ignore_errors=True)  # the writer made a fresh dir in the gap
                    if not link.is_symlink():
                        os.symlink(target, link)
                    if parked.is_dir() and not os.path.lexists(real):
                        os.rename(parked, real)

    t = threading.Thread(target=swapper, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()
    assert swaps > 0, "the swapper never ran: the race was not exercised"


def _entries(d: Path) -> int:
    return sum(len(files) + len(dirs) for _root, dirs, files in os.walk(d))


def race(tmp: Path, sub: str, writes: int) -> tuple[int, int, int]:
    """(escapes, refusals, written) of ``writes`` writes to ``kdir/sub/f.json`` while ``sub`` swaps."""
    kdir, outside = tmp / "k", tmp / "outside"
    (kdir / sub).mkdir(parents=True)
    outside.mkdir()
    refused = written = 0
    with swapping(kdir / sub, outside):
        for i in range(writes):
            try:
                atomic_write_bytes(kdir / sub / "f.json", b"%d" % i, kdir)
                written += 1
            except UnsafePath:
                refused += 1
            except WorkbenchError:  # the dir was parked for a moment: a named refusal, never a crash
                refused += 1
    return _entries(outside), refused, written


def writer_race(tmp: Path, swapped: str, writes: int) -> tuple[int, int, int]:
    """(escapes, refusals, written) of ``writes`` report-set writes while ``swapped`` (the kernel dir
    itself, or its ``reports/``) swaps with a link to an outside dir (a stand-in for the shipped
    recorded session)."""
    from cutile_workbench.artifacts.writer import write_plan
    from cutile_workbench.model import PlannedFile, ReportPlan

    kdir, outside = tmp / "root" / "matmul", tmp / "outside"
    (kdir / "reports").mkdir(parents=True)
    outside.mkdir()
    (outside / "reports").mkdir()
    real = kdir if swapped == "kernel dir" else kdir / "reports"
    refused = written = 0
    with swapping(real, outside if swapped == "kernel dir" else outside / "reports"):
        for i in range(writes):
            files = [
                PlannedFile("reports/performance.md", f"VERDICT: DONE\n{i}\n"),
                PlannedFile("reports/agent_logs/agent_e.md", f"{i}\n"),
                PlannedFile("perf_cutile_rs.txt", f"{i}\n"),
            ]
            try:
                write_plan(ReportPlan("E", "matmul", kdir, files, "DONE", "", True), lock_timeout_s=5)
                written += 1
            except WorkbenchError:  # refused while a link is in place: named, nothing written
                refused += 1
    return _entries(outside) - 1, refused, written  # - 1: the outside dir's own reports/
