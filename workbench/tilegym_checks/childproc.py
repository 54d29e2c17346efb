"""Child processes in the TileGym environment: the user's Python, ``cwd=$TILEGYM_PATH``, ``PYTHONPATH=src``.

Contract: every probe of the TileGym checkout (the E precondition import, ``--collect-only``) runs
here, never in the workbench process (TileGym imports torch and picks a backend at import time).
:func:`run_child` never raises for a failing child; it returns the exit status and output, with
``timed_out`` set when the time limit killed it (the whole process group is killed, so pytest's
own children do not linger). A Python that cannot be started raises
:class:`~workbench.errors.InputError` (exit 2).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import InputError

_ERROR_SUMMARY = re.compile(r"\b\d+ errors?\b")
_NODEID_LINE = re.compile(r"^(?P<id>[^\s:][^\s]*?\.py::\S.*)$")


@dataclass(frozen=True)
class ChildResult:
    """What a child run returned; ``output`` is stdout then stderr, as a user would see them."""

    argv: tuple[str, ...]
    cwd: str
    rc: int
    stdout: str
    stderr: str
    timed_out: bool = False

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
) -> ChildResult:
    """Run ``python args...`` in its own process group; kill the group on timeout."""
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
    try:
        out, err = proc.communicate(timeout=timeout_s)
        return ChildResult(argv, str(cwd), proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        note = f"\n[cutile-workbench] killed after {timeout_s:g} s (timeout)\n"
        return ChildResult(argv, str(cwd), proc.returncode or -9, out or "", (err or "") + note, True)


def _kill_group(proc: subprocess.Popen[str]) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class CollectResult:
    """``pytest --collect-only -q`` in the child: the node ids it printed and the raw run."""

    nodeids: tuple[str, ...]
    child: ChildResult

    @property
    def ok(self) -> bool:
        # pytest exit 5 = "no tests collected", a valid answer (zero cases), not a failure
        return not self.child.timed_out and self.child.rc in (0, 5) and not self.errors

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
    return CollectResult(parse_collect_output(child.stdout), child)


def parse_collect_output(text: str) -> tuple[str, ...]:
    """Node ids from ``--collect-only -q`` output (one per line, before the summary line)."""
    ids: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        m = _NODEID_LINE.match(line)
        if m:
            ids.append(m.group("id"))
    return tuple(ids)
