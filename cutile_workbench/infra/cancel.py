"""Signals → a cancel event, for long work that runs in a thread of its own (the CLI's live runs).

Contract of :func:`run_cancellable`:
- ``work(cancel)`` runs in a daemon thread; the calling thread waits for it to end and returns
  what it returned (or re-raises what it raised).
- While it runs, SIGINT (Ctrl-C), SIGTERM (a kill, a batch system) and SIGHUP (the SSH session
  dropped) do not interrupt anything: they set ``cancel`` and, the first time, call
  ``on_signal(signum)`` (e.g. to say what is being stopped). ``work`` must poll ``cancel`` and
  stop its children (the runner kills its pytest child's process group). Handlers are installed
  only when called from the main thread (Python's rule; elsewhere nothing changes) and the
  previous ones are restored afterwards.
- The wait always outlives ``work``: should anything interrupt the wait itself, ``cancel`` is set
  and the wait goes on, so the caller never returns — and the interpreter never exits — while
  ``work`` still has children running.

:func:`install_cancel_handlers` / :func:`restore_handlers` are the same handlers for a face that
waits its own way (the TUI's sharded re-run: a dropped SSH session must stop the shard workers).

Why not ``try: thread.join() except KeyboardInterrupt``: in Python 3.11 a join interrupted by a
signal handler's exception can mark the thread finished while it still runs
(``threading._wait_for_tstate_lock`` releases the lock the running thread holds), so the second
``join`` returned at once, the CLI exited and the pytest child — in a session of its own — was
orphaned; and SIGTERM/SIGHUP, left at their default, killed the CLI with the same result.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def run_cancellable(
    work: Callable[[threading.Event], T],
    *,
    on_signal: Callable[[int], None] | None = None,
    name: str = "work",
    poll_s: float = 0.2,
) -> T:
    """See the module contract."""
    cancel = threading.Event()
    done = threading.Event()
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            box["result"] = work(cancel)
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    def on_cancel_signal(signum: int) -> None:
        first = not cancel.is_set()
        cancel.set()
        if first and on_signal is not None:
            on_signal(signum)

    previous = install_cancel_handlers(on_cancel_signal)
    try:
        threading.Thread(target=body, name=name, daemon=True).start()
        while True:
            try:
                if done.wait(poll_s):
                    break
            except (
                BaseException
            ):  # only an error of ours in this loop: never leave the work's children behind
                cancel.set()
    finally:
        restore_handlers(previous)
    if "error" in box:
        raise box["error"]
    result: T = box["result"]
    return result


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def install_cancel_handlers(on_signal: Callable[[int], None]) -> dict[int, Any]:
    """SIGINT/SIGTERM/SIGHUP call ``on_signal(signum)`` instead of their default; returns the previous
    handlers for :func:`restore_handlers`. Outside the main thread nothing is installed (``{}``)."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return previous

    def handler(signum: int, _frame: Any) -> None:
        on_signal(signum)

    for sig in CANCEL_SIGNALS:
        previous[sig] = signal.signal(sig, handler)
    return previous


def restore_handlers(previous: dict[int, Any]) -> None:
    for sig, h in previous.items():
        signal.signal(sig, h)
