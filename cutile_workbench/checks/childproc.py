"""Child processes in the TileGym environment: the user's Python, ``cwd=$TILEGYM_PATH``, ``PYTHONPATH=src``.

Contract: every probe of the TileGym checkout (the E precondition import, ``--collect-only``) runs
here, never in the workbench process (TileGym imports torch and picks a backend at import time).
:func:`run_child` never raises for a failing child; it returns the exit status and output, with
``timed_out`` set when the time limit killed it (the whole process group is killed, so pytest's
own children do not linger). A Python that cannot be started raises
:class:`~cutile_workbench.errors.InputError` (exit 2).

Cancellation: with ``cancelled`` given, :func:`run_child` polls it every ``poll_s`` while the child
runs; once it returns True the child's whole process group gets SIGTERM, then SIGKILL after
``CANCEL_GRACE_S``, and the result has ``cancelled=True`` (its output is what the child printed
until then). The caller writes nothing for a cancelled result.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cutile_workbench.errors import InputError
from cutile_workbench.proc.collect import parse_collect_output
from cutile_workbench.proc.group import kill_group

_ERROR_SUMMARY = re.compile(r"\b\d+ errors?\b")
#: seconds between SIGTERM and SIGKILL when the user cancels (the TUI must answer Escape quickly)
CANCEL_GRACE_S = 0.5
#: seconds between SIGTERM and SIGKILL on a timeout (give pytest time to clean up its children)
TIMEOUT_GRACE_S = 3.0


@dataclass(frozen=True)
class ChildResult:
    """What a child run returned; ``output`` is stdout then stderr, as a user would see them."""

    argv: tuple[str, ...]
    cwd: str
    rc: int
    stdout: str
    stderr: str
    timed_out: bool = False
    cancelled: bool = False  # the caller's cancelled() turned true; the process group was killed

    @property
    def output(self) -> str:
        return self.stdout + (("\n" if self.stdout and not self.stdout.endswith("\n") else "") + self.stderr)

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def tilegym_env(tilegym: Path, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment TileGym's docs use: ``src`` first on PYTHONPATH, the user's variables kept."""
    env = dict(os.environ)
    src = str(Path(tilegym).resolve() / "src")
    parts = [src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.setdefault("TILEGYM_PATH", str(Path(tilegym).resolve()))
    # pytest colour codes would break the node-id parsing of --collect-only output
    env.setdefault("PY_COLORS", "0")
    if overrides:
        env.update(overrides)
    return env


def run_child(
    python: str,
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cancelled: Callable[[], bool] | None = None,
    poll_s: float = 0.1,
) -> ChildResult:
    """Run ``python args...`` in its own process group; kill the group on timeout or cancel."""
    argv = (python, *args)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=str(cwd),
            env=dict(env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        raise InputError(f"cannot start Python interpreter: {exc.strerror or exc}", path=python) from exc
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(argv, timeout_s)
            if cancelled is not None and cancelled():
                return _stop(proc, argv, cwd, "cancelled by the user", CANCEL_GRACE_S, cancelled=True)
            # communicate() may be re-entered after TimeoutExpired without losing output (stdlib docs)
            step = remaining if cancelled is None else min(poll_s, remaining)
            try:
                out, err = proc.communicate(timeout=step)
            except subprocess.TimeoutExpired:
                continue
            return ChildResult(argv, str(cwd), proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        return _stop(
            proc, argv, cwd, f"killed after {timeout_s:g} s (timeout)", TIMEOUT_GRACE_S, timed_out=True
        )
    except BaseException:
        # KeyboardInterrupt in the CLI, or anything else: the child's group must not outlive us
        kill_group(proc, CANCEL_GRACE_S, kill_wait_s=TIMEOUT_GRACE_S)
        raise


def _stop(
    proc: subprocess.Popen[str],
    argv: tuple[str, ...],
    cwd: Path,
    why: str,
    grace_s: float,
    *,
    timed_out: bool = False,
    cancelled: bool = False,
) -> ChildResult:
    kill_group(proc, grace_s, kill_wait_s=TIMEOUT_GRACE_S)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_GRACE_S)
    except subprocess.TimeoutExpired:
        # a grandchild that left the group still holds the pipes: stop reading rather than hang
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        out, err = "", "[cutile-workbench] output lost: a process outside the group kept the pipes open\n"
    note = f"\n[cutile-workbench] {why}\n"
    rc = proc.returncode if proc.returncode not in (None, 0) else -9
    return ChildResult(argv, str(cwd), rc, out or "", (err or "") + note, timed_out, cancelled)


@dataclass(frozen=True)
class CollectResult:
    """``pytest --collect-only -q`` in the child: the node ids it printed and the raw run."""

    nodeids: tuple[str, ...]
    child: ChildResult

    @property
    def ok(self) -> bool:
        # pytest exit 5 = "no tests collected", a valid answer (zero cases), not a failure
        return (
            not self.child.timed_out
            and not self.child.cancelled
            and self.child.rc in (0, 5)
            and not self.errors
        )

    @property
    def errors(self) -> tuple[str, ...]:
        found: list[str] = []
        for raw in self.child.output.splitlines():
            line = raw.strip()
            if line.startswith("ERROR ") or _ERROR_SUMMARY.search(line) or line.startswith("Interrupted:"):
                found.append(line)
        return tuple(found)


def collect_nodeids(
    python: str,
    tilegym: Path,
    target: str,
    k_expr: str | None,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
) -> CollectResult:
    """``python -m pytest <target> [-k expr] --collect-only -q`` with TileGym's cwd and env."""
    args = ["-m", "pytest", target]
    if k_expr:
        args += ["-k", k_expr]
    args += ["--collect-only", "-q", "-p", "no:cacheprovider"]
    child = run_child(python, args, cwd=Path(tilegym), env=tilegym_env(tilegym, env), timeout_s=timeout_s)
    return CollectResult(tuple(parse_collect_output(child.stdout)), child)
