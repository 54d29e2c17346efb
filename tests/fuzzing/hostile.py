"""Hostile placements (issue 25): a symlink out, a FIFO, ``/dev/zero``, a directory or a dangling link planted
at every path the app touches in a kernel dir, then one CLI command run in-process on it.

Contract of :func:`run_hostile_case` (raises :class:`~fuzzing.targets.RuleViolation` otherwise):
- the command returns within :data:`CASE_TIMEOUT_S` (a FIFO or device must never hang it), with exit
  0, 1, 2 or 3 and never "internal error";
- nothing outside the kernel dir is opened, created or changed: every ``open`` and ``sqlite3.connect``
  the process makes (seen through a ``sys.addaudithook`` hook) resolves outside the planted
  ``outside/`` area, and that area's tree (names, sizes, sha256) is unchanged;
- inside the kernel dir, only ``reports/``, E's perf logs and ``workbench/history.sqlite*`` change, and
  only on exit 0 (or ``report f`` exit 1, the BLOCKED set).
Memory: ``/dev/zero`` read whole would take the machine down, so callers run these cases in a process
with an address-space limit (``bench/fuzz_report.py --hostile`` and ``tests/fuzz/test_fuzz_hostile.py`` do).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .targets import REPO, RuleViolation

PRISTINE = REPO / "cutile_workbench/profiles/tilegym/session/matmul"
KERNEL = "matmul"
CONFIG = "True-True-False-False-2048-2048-2048-0-0-torch.float16"
CASE_TIMEOUT_S = 30
#: every path (relative to the kernel dir) that some command reads or writes
PLACES: tuple[str, ...] = (
    "reports",
    "reports/.workbench-backup",
    "reports/agent_logs",
    "reports/performance.md",
    "reports/.workbench.lock",
    "reports/.workbench-journal.json",
    "reports/agent_logs/perf_cutile_rs.full.txt",
    "perf_cutile_rs.txt",
    "baseline_perf_cutile.txt",
    "reference",
    "reference/analysis.json",
    "reference/reference_static_persistent.mlir",
    "generated",
    "generated/generated_static_persistent.mlir",
    "workbench",
    "workbench/session.json",
    "workbench/launches.json.gz",
    "workbench/events.jsonl",
    "cutile_workbench/ir",
    "workbench/ir/index.json",
    f"workbench/ir/candidate/{CONFIG}.mlir",
    f"workbench/ir/reference/{CONFIG}.mlir",
    "workbench/history.sqlite",
    "workbench/history.sqlite-journal",
    "workbench/probes",
)
DIR_PLACES = frozenset(
    {
        "reports",
        "reports/.workbench-backup",
        "reports/agent_logs",
        "reference",
        "generated",
        "workbench",
        "cutile_workbench/ir",
        "workbench/probes",
    }
)
PLANTS: tuple[str, ...] = ("link_out", "fifo", "dev_zero", "dir", "dangling")
COMMANDS: dict[str, list[str]] = {
    "report_e": ["report", "e", KERNEL, "--yes", "--no-real-scripts"],
    "report_f": ["report", "f", KERNEL, "--yes", "--no-real-scripts"],
    "table": ["table", KERNEL, "--json"],
    "history": ["history", KERNEL],
    "timeline": ["timeline", KERNEL, "--config", CONFIG],
    "diff": ["diff", KERNEL],
}
_E_PERF_LOG = re.compile(r"^perf_cutile_rs(_[A-Za-z0-9_.-]+)?\.txt$")


class Hung(BaseException):
    """The case ran past CASE_TIMEOUT_S (raised from SIGALRM)."""


@dataclass(frozen=True)
class HostileResult:
    rc: int
    changed: tuple[str, ...]
    stderr: str


_recording: list[tuple[str, str]] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if _recording is None:
        return
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _recording.append((event, os.fsdecode(args[0])))
    elif event == "sqlite3.connect" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        _recording.append((event, os.fsdecode(args[0])))


_hook_installed = False


def _install_hook() -> None:
    global _hook_installed
    if not _hook_installed:
        sys.addaudithook(_audit)
        _hook_installed = True


def tree(root: Path) -> dict[str, str]:
    """name → sha256 (files), "dir" (directories), "link:<target>" (links), "special" — never following a link."""
    out: dict[str, str] = {}
    if not root.exists() and not root.is_symlink():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            elif p.is_file():
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "special"
    return out


def plant(kernel_dir: Path, place: str, how: str, outside: Path) -> None:
    """Replace ``kernel_dir/place`` by the hostile ``how`` (the original, if any, moves to ``outside``)."""
    p = kernel_dir / place
    p.parent.mkdir(parents=True, exist_ok=True)
    away = outside / place.replace("/", "__")
    if p.exists() or p.is_symlink():
        shutil.move(str(p), str(away))
    elif how == "link_out":  # nothing there yet: a link to an empty outside file / dir still must not be used
        if place in DIR_PLACES:
            away.mkdir()
        else:
            away.write_bytes(b"")
    if how == "link_out":
        p.symlink_to(away)
    elif how == "fifo":
        os.mkfifo(p)
    elif how == "dev_zero":
        p.symlink_to("/dev/zero")
    elif how == "dir":
        p.mkdir()
    elif how == "dangling":
        p.symlink_to(outside / "does-not-exist" / "x")
    else:
        raise ValueError(how)


def _alarm(_signum: int, _frame: Any) -> None:
    raise Hung()


def run_hostile_case(place: str, how: str, command: str, workdir: Path) -> HostileResult:
    """One case (see module contract); the tree is left under ``workdir`` for the caller to remove."""
    global _recording
    from cutile_workbench.cli import main

    _install_hook()
    case = workdir / f"{command}-{how}-{place.replace('/', '__')}"
    if case.exists():
        shutil.rmtree(case)
    out_root, outside = case / "root", case / "outside"
    kernel_dir = out_root / KERNEL
    outside.mkdir(parents=True)
    shutil.copytree(PRISTINE, kernel_dir)
    plant(kernel_dir, place, how, outside)
    repro = f"hostile place={place} plant={how} command={command} (tests/fuzzing/hostile.py)"
    before_in, before_out = tree(kernel_dir), tree(outside)
    err, out = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT_S)
    _recording = []
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main([*COMMANDS[command], "--out-root", str(out_root)])
    except Hung:
        raise RuleViolation(f"{repro}: hung (over {CASE_TIMEOUT_S} s)") from None
    except MemoryError:
        raise RuleViolation(f"{repro}: ran out of memory (read a device whole?)") from None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        opened, _recording = _recording or [], None
    stderr = err.getvalue()
    outside_real = os.path.realpath(outside)
    for event, path in opened:
        real = os.path.realpath(path)
        if real == outside_real or real.startswith(outside_real + os.sep) or real.startswith("/dev/"):
            raise RuleViolation(f"{repro}: {event} of {path} (resolves to {real}, outside the kernel dir)")
    if "internal error" in stderr:
        raise RuleViolation(
            f"{repro}: untyped exception reached the CLI (exit {rc}): {stderr.strip()[-500:]}"
        )
    if rc not in (0, 1, 2, 3):
        raise RuleViolation(f"{repro}: exit status {rc}")
    if tree(outside) != before_out:
        raise RuleViolation(f"{repro}: the outside area changed")
    after_in = tree(kernel_dir)
    changed = tuple(sorted(k for k in set(before_in) | set(after_in) if before_in.get(k) != after_in.get(k)))
    may_write = rc == 0 or (command == "report_f" and rc == 1)
    for c in changed:
        allowed = (
            c.startswith("reports/")
            or _E_PERF_LOG.match(c)
            or (command == "history" and c.startswith("workbench/history.sqlite"))
        )
        if not (allowed and may_write):
            raise RuleViolation(f"{repro}: exit {rc} changed {c}")
    if rc == 2 and str(out_root) not in stderr and "key '" not in stderr:
        raise RuleViolation(f"{repro}: exit 2 names no file or key: {stderr.strip()[-300:]}")
    return HostileResult(rc, changed, stderr)


def all_cases() -> list[tuple[str, str, str]]:
    """Every (place, plant, command) combination, in a fixed order."""
    return [(p, h, c) for p in PLACES for h in PLANTS for c in COMMANDS]


#: the address-space limit of a process running hostile cases (``/dev/zero`` read whole hits it, not the box)
MEMORY_LIMIT_BYTES = 4 << 30


def limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def run_cases(cases: list[tuple[str, str, str]], workdir: Path) -> tuple[dict[str, int], list[str]]:
    """Run ``cases`` (removing each tree after it); returns (counts by outcome, violation messages)."""
    counts: dict[str, int] = {}
    violations: list[str] = []
    for place, how, command in cases:
        try:
            res = run_hostile_case(place, how, command, workdir)
            key = f"exit {res.rc}" + (" (wrote)" if res.changed else "")
        except RuleViolation as exc:
            key = "violation"
            violations.append(str(exc)[:400])
        counts[key] = counts.get(key, 0) + 1
        shutil.rmtree(workdir / f"{command}-{how}-{place.replace('/', '__')}", ignore_errors=True)
    return counts, violations


def main(argv: list[str]) -> int:
    """``python -m fuzzing.hostile PLACE:PLANT:COMMAND ...`` under the memory limit; prints violations."""
    import tempfile

    limit_memory()
    cases = [tuple(a.split(":")) for a in argv]
    with tempfile.TemporaryDirectory(prefix="fuzz-hostile-") as d:
        counts, violations = run_cases(cases, Path(d))  # type: ignore[arg-type]
    print(counts)
    for v in violations:
        print("VIOLATION", v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
