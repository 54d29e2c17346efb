"""Cancellation of TileGym child processes: ``run_child(cancelled=...)`` down to the Checks screen's Escape.

The TileGym tree is SYNTHETIC (``tests/fixtures/tilegym_tree/fake_tilegym.py``) with a SLEEPING
autotuner: importing it records the child's pid and the pid of a grandchild it starts (a second
member of the process group, as pytest's own children would be) in a file *outside* the tree,
sleeps 30 s, and only then writes ``IMPORT_FINISHED`` into the tree. The children are real
processes of this venv's Python; the tests prove the cancel stops the child at once (the hook is not
polled again once it said yes, and the group is killed with the short CANCEL_GRACE_S, not the
timeout's grace), both processes are gone and the marker (or anything else) never appears in the tree.
No assertion reads the wall clock: "within ~1 s" is the design budget (poll + grace), pinned below as
constants, and the path taken is read from what the code did (a counted step), not from how long it
took on this box (a loaded box made the old elapsed-time asserts fail).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from checks_helpers import fake
from pilot_wait import poll, until
from tui_helpers import make_data

from cutile_workbench.checks import childproc
from cutile_workbench.checks.childproc import CANCEL_GRACE_S, TIMEOUT_GRACE_S, run_child, tilegym_env
from cutile_workbench.checks.precondition import check_precondition
from cutile_workbench.checks.wiring import check_wiring
from cutile_workbench.proc.group import kill_group
from cutile_workbench.services.checks import ChecksResult, gather_checks
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.screens.checks import ChecksScreen

REPO = Path(__file__).resolve().parents[2]

CHILD_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
PIDS_VAR = "CUTILE_WB_TEST_PIDS"

# SYNTHETIC autotuner whose import is slow; IGNORE_TERM (formatted in) makes it ignore SIGTERM
SLEEPING_AUTOTUNER = """\
import os, signal, subprocess, sys, time
from pathlib import Path
if {ignore_term}:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
_grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
Path(os.environ["{pids_var}"]).write_text(f"{{os.getpid()}} {{_grandchild.pid}}\\n")
time.sleep(30)
(Path(__file__).resolve().parents[5] / "IMPORT_FINISHED").write_text("the child was not stopped\\n")


def autotune_launch(kernel_fn, configs, key, kernel_name="unknown"):
    return None
"""


def _sleeping_tree(tmp_path: Path, *, ignore_term: bool = False, slow_collect: bool = False) -> Path:
    code = SLEEPING_AUTOTUNER.format(ignore_term=ignore_term, pids_var=PIDS_VAR)
    # with slow_collect the test file imports the backend, so pytest's collection sleeps in it too
    test = (
        "import tilegym.backend.cutile_rs  # noqa: F401\n" if slow_collect else ""
    ) + fake.TEST_BMM_MISSING
    return fake.make_tree(tmp_path / "TileGym", autotuner=code, tests={"test_bmm.py": test})


def _fingerprint(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _wait_for_pids(pid_file: Path, timeout_s: float = 60.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = pid_file.read_text() if pid_file.exists() else ""
        if text.endswith("\n"):
            return [int(p) for p in text.split()]
        time.sleep(0.02)
    raise AssertionError("the sleeping child never started")


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie awaiting its reaper counts as gone: it cannot run or write)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _assert_gone(pids: list[int], within_s: float = 60.0) -> None:
    """Wait for the state (every pid gone); ``within_s`` only ends a hung test, it is not the claim."""
    deadline = time.monotonic() + within_s
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not [p for p in pids if _alive(p)], "a process of the cancelled child's group is still running"


def _cancel_when_started(pid_file: Path) -> tuple[Callable[[], bool], dict[str, int]]:
    """A ``cancelled()`` that turns True once the child has written its pids (i.e. is mid-import);
    ``seen["yes"]`` counts the calls that answered True (1: the caller stopped polling at once)."""
    seen: dict[str, int] = {"yes": 0}

    def cancelled() -> bool:
        if not seen["yes"] and not (pid_file.exists() and pid_file.read_text().endswith("\n")):
            return False
        seen["yes"] += 1
        return True

    return cancelled, seen


@pytest.fixture
def kills(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The grace periods run_child's kills were given (the real kill still runs)."""
    graces: list[float] = []

    def spy(proc: Any, grace_s: float, **kw: Any) -> str:
        graces.append(grace_s)
        return kill_group(proc, grace_s, **kw)

    monkeypatch.setattr(childproc, "kill_group", spy)
    return graces


def test_the_cancel_budget_is_under_a_second() -> None:
    """Escape must answer within ~1 s: one poll step plus the SIGTERM->SIGKILL grace (constants)."""
    poll_s = inspect.signature(run_child).parameters["poll_s"].default
    assert poll_s + CANCEL_GRACE_S <= 1.0 and CANCEL_GRACE_S < TIMEOUT_GRACE_S


@pytest.fixture
def pid_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "pids.txt"  # outside the TileGym tree
    monkeypatch.setenv(PIDS_VAR, str(path))
    return path


@pytest.mark.parametrize("ignore_term", [False, True], ids=["sigterm", "sigterm-ignored-sigkill"])
def test_run_child_cancel_kills_the_process_group_at_once(
    tmp_path: Path, pid_file: Path, kills: list[float], ignore_term: bool
) -> None:
    root = _sleeping_tree(tmp_path, ignore_term=ignore_term)
    before = _fingerprint(root)
    cancelled, seen = _cancel_when_started(pid_file)
    code = "from tilegym.backend.cutile_rs import autotune_launch"
    child = run_child(
        sys.executable,
        ["-c", code],
        cwd=root,
        env=tilegym_env(root, CHILD_ENV),
        timeout_s=60,
        cancelled=cancelled,
    )
    assert child.cancelled and not child.timed_out and child.rc != 0
    assert "cancelled by the user" in child.stderr
    assert seen["yes"] == 1 and kills == [CANCEL_GRACE_S]  # stopped at the first yes, the short grace
    _assert_gone(_wait_for_pids(pid_file))
    assert _fingerprint(root) == before


def test_without_cancel_hook_the_child_runs_and_a_timeout_still_kills(tmp_path: Path, pid_file: Path) -> None:
    root = _sleeping_tree(tmp_path)
    code = "from tilegym.backend.cutile_rs import autotune_launch"
    child = run_child(sys.executable, ["-c", code], cwd=root, env=tilegym_env(root, CHILD_ENV), timeout_s=1.5)
    assert child.timed_out and not child.cancelled
    # on a loaded box the timeout may strike before the child wrote its pids: then none to check
    text = pid_file.read_text() if pid_file.exists() else ""
    _assert_gone([int(p) for p in text.split()] if text.endswith("\n") else [])
    assert not (root / "IMPORT_FINISHED").exists()


def test_a_hook_that_never_fires_changes_nothing(tmp_path: Path) -> None:
    """The polling loop must return the child's output and status exactly as communicate() did."""
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    polled = run_child(
        sys.executable,
        ["-c", code],
        cwd=tmp_path,
        env=dict(os.environ),
        timeout_s=30,
        cancelled=lambda: False,
        poll_s=0.01,
    )
    plain = run_child(sys.executable, ["-c", code], cwd=tmp_path, env=dict(os.environ), timeout_s=30)
    assert (
        (polled.rc, polled.stdout, polled.stderr)
        == (plain.rc, plain.stdout, plain.stderr)
        == (3, "out\n", "err\n")
    )
    assert not polled.cancelled and not polled.timed_out


def test_check_precondition_reports_cancelled_not_blocked_reason(tmp_path: Path, pid_file: Path) -> None:
    root = _sleeping_tree(tmp_path)
    cancelled, _ = _cancel_when_started(pid_file)
    result = check_precondition(root, python=sys.executable, env=CHILD_ENV, timeout_s=60, cancelled=cancelled)
    assert not result.ok and result.child.cancelled
    assert "cancelled" in result.reason
    _assert_gone(_wait_for_pids(pid_file))


def test_check_wiring_collect_is_cancelled(tmp_path: Path, pid_file: Path, kills: list[float]) -> None:
    root = _sleeping_tree(tmp_path, slow_collect=True)
    before = _fingerprint(root)
    cancelled, seen = _cancel_when_started(pid_file)
    check = check_wiring(
        root,
        "bmm",
        python=sys.executable,
        env={**CHILD_ENV, "PYTHONDONTWRITEBYTECODE": "1"},
        timeout_s=60,
        cancelled=cancelled,
    )
    assert check.collect is not None and check.collect.child.cancelled and not check.collect.ok
    assert seen["yes"] == 1 and kills == [CANCEL_GRACE_S]
    _assert_gone(_wait_for_pids(pid_file))
    assert _fingerprint(root) == before


def test_gather_checks_stops_at_the_cancelled_step(
    tmp_path: Path, pid_file: Path, kills: list[float]
) -> None:
    root = _sleeping_tree(tmp_path)
    before = _fingerprint(root)
    cancelled, seen = _cancel_when_started(pid_file)
    result = gather_checks("bmm", root, None, python=sys.executable, env=CHILD_ENV, cancelled=cancelled)
    assert result.cancelled
    assert [(i.section, i.status) for i in result.items] == [("precondition", "CANCELLED")]
    assert seen["yes"] == 1 and kills == [CANCEL_GRACE_S]  # no later step asked again or ran
    _assert_gone(_wait_for_pids(pid_file))
    assert _fingerprint(root) == before


async def test_escape_on_the_checks_screen_kills_the_running_child(
    tmp_path: Path, pid_file: Path, kills: list[float]
) -> None:
    root = _sleeping_tree(tmp_path)
    before = _fingerprint(root)
    results: list[ChecksResult] = []

    def run(cancelled: Callable[[], bool]) -> ChecksResult:
        result = gather_checks("bmm", root, None, python=sys.executable, env=CHILD_ENV, cancelled=cancelled)
        results.append(result)
        return result

    data = make_data()
    data.kernel = "bmm"
    data.tilegym = root
    data.run_checks = run
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("5")
        await until(pilot, lambda: isinstance(app.screen, ChecksScreen), "5 opens the Checks screen")
        screen = app.screen
        assert isinstance(screen, ChecksScreen)
        await pilot.press("r")
        pids = await _async_wait_for_pids(pilot, pid_file)
        assert all(_alive(p) for p in pids)
        await pilot.press("escape")
        await until(pilot, lambda: not screen.running, "Escape stopped the checks")
        assert not screen.running
        await app.workers.wait_for_complete()
        _assert_gone(pids)
        # A cancelled thread worker counts as complete at once, while its thread is still returning
        # from gather_checks: wait for the result it appends (results was [] under load in r3 of the
        # 2026-12-03 load proof), then read it.
        await poll(pilot, lambda: results, "gather_checks returned its cancelled result")
        assert (
            results and results[0].cancelled and kills == [CANCEL_GRACE_S]
        )  # the cancel path, not a timeout
        assert screen.result is None  # a cancelled run is not shown as a result
        assert "cancelled" in str(screen.query_one("#checks-status").render())
    assert _fingerprint(root) == before


async def _async_wait_for_pids(pilot: Any, pid_file: Path) -> list[int]:
    def written() -> bool:
        return pid_file.exists() and pid_file.read_text().endswith("\n")

    # the pid file is written by a child process, outside the app's queues: poll it (a cap of
    # rounds, not seconds, ends a hung test)
    await poll(pilot, written, "the sleeping child started (its pid file written)", rounds=1200, step=0.05)
    return [int(p) for p in pid_file.read_text().split()]


def test_thread_safety_of_cancel_from_another_thread(tmp_path: Path, pid_file: Path) -> None:
    """The TUI cancels from the event loop while the worker thread polls: an Event set elsewhere works."""
    root = _sleeping_tree(tmp_path)
    flag = threading.Event()

    def cancel_once_started() -> None:
        _wait_for_pids(pid_file)
        flag.set()

    timer = threading.Thread(target=cancel_once_started)
    timer.start()
    code = "from tilegym.backend.cutile_rs import autotune_launch"
    child = run_child(
        sys.executable,
        ["-c", code],
        cwd=root,
        env=tilegym_env(root, CHILD_ENV),
        timeout_s=60,
        cancelled=flag.is_set,
    )
    timer.join()
    assert child.cancelled
    _assert_gone(_wait_for_pids(pid_file))
