"""Guarded, crash-safe, all-or-nothing writes of a :class:`~cutile_workbench.model.ReportPlan`.

Contract:
- ``write_plan(plan)`` refuses (``ValidationRefused``) unless ``plan.ok``; every target must be a
  plain relative path that resolves — symlinks included (``os.path.realpath``) — under
  ``<kernel_dir>/reports/``, or be exactly one of E's perf logs (``perf_cutile_rs.txt``,
  ``perf_cutile_rs_<variant>.txt``) or ``SKILL_METHODOLOGY_BLOCKED.txt`` in the kernel dir;
  anything else raises ``UnsafePath`` before a byte is written. Nothing outside the kernel dir is
  ever created, replaced or removed.
- One writer at a time per kernel dir: ``reports/.workbench.lock`` (O_CREAT|O_EXCL, JSON with
  pid, host, time). A lock whose pid is dead on this host is stale and is cleared under a second
  O_EXCL "breaker" file, so two processes can never both clear it and steal a live lock.
- Replaced files are hard-linked (or copied) to ``reports/.workbench-backup/<UTC stamp>/<relpath>``;
  a ``.workbench-backup`` that is a symlink (or not a dir) is refused (``UnsafePath``) before a byte
  is written (:func:`cutile_workbench.artifacts.confine.confine_write`).
- A write that fails before its commit point (a full disk, a refused path) removes its own temp
  files (the partial one included), the backup dir it made and the dirs it created, then raises.
- Confined by descriptor (issue 33 §4): the kernel dir is opened once (never through a link) and
  every create, link, rename and unlink of a write (the lock included) is relative to descriptors
  reached from it with ``O_NOFOLLOW``; a kernel dir, ``reports/`` or subdir swapped for a link
  while a write runs cannot redirect a byte (the path checks above are the first, friendlier
  refusal). Recovery (:func:`recover`) still works by checked paths.
- Atomic across files: (1) each new file goes to a temp file beside its target + fsync; (2) a journal
  ``reports/.workbench-journal.json`` listing the renames is committed (temp + fsync + rename);
  (3) the renames run; (4) the journal is removed. :func:`recover` (run at the start of every write
  and by the workspace loader) rolls a committed journal forward and deletes uncommitted temps, so
  after any crash either the complete old set or the complete new set is on disk, never a mix.
- A report set is one unit (issue 33 §8): a plan of a stage that owns a set (:data:`REPORT_SETS`:
  F's ``reports/perf_investigation_*.md``) replaces the whole set: the set's files on disk that
  the new plan does not contain are backed up with the replaced ones and removed, listed in the
  same journal (``removals``) so a crash rolls them forward with the renames; the kernel dir never
  holds two runs' verdicts. ``WriteResult.removed`` names them.
- Fault injection for tests: with ``CUTILE_WORKBENCH_WRITER_KILL_AT=N`` the process SIGKILLs itself
  at the N-th step (see :data:`STEPS`); unset in normal use, so the hook is a no-op.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import secrets
import signal
import socket
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cutile_workbench.artifacts.confine import check_kernel_name, confine_write, read_regular
from cutile_workbench.errors import UnsafePath, ValidationRefused, WorkbenchError
from cutile_workbench.infra.paths import open_kernel_dir, walk_at
from cutile_workbench.model import ReportPlan

LOCK_NAME = ".workbench.lock"
BREAKER_NAME = ".workbench.lock.break"
JOURNAL_NAME = ".workbench-journal.json"
BACKUP_DIR_NAME = ".workbench-backup"
TEMP_MARK = ".wbtmp-"
_TOP_LEVEL_OK = re.compile(r"^(perf_cutile_rs(_[A-Za-z0-9_.-]+)?\.txt|SKILL_METHODOLOGY_BLOCKED\.txt)$")
KILL_ENV = "CUTILE_WORKBENCH_WRITER_KILL_AT"

#: the fault points of one write, in order (the N of ``KILL_ENV`` counts calls to ``_step``)
STEPS = (
    "locked",
    "recovered",
    "temp_written",
    "backup_made",
    "journal_temp",
    "journal_committed",
    "renamed",
    "journal_removed",
    "unlocked",
)


#: per stage, the report set its plan replaces as a whole (relpaths under the kernel dir, top of reports/)
REPORT_SETS: dict[str, re.Pattern[str]] = {
    "F": re.compile(r"reports/perf_investigation_[A-Za-z0-9_.,+=-]+\.md"),
}


@dataclass
class WriteResult:
    """What a write did: the absolute paths written, the previous set's files removed, and where
    replaced (and removed) files were backed up."""

    written: list[Path] = field(default_factory=list)
    backup_dir: Path | None = None
    removed: list[Path] = field(default_factory=list)


def stale_set_files(plan: ReportPlan) -> list[str]:
    """The relpaths of the plan's report set on disk that the plan does not write (module contract)."""
    pattern = REPORT_SETS.get(plan.stage)
    reports = Path(plan.kernel_dir) / "reports"
    if pattern is None or reports.is_symlink() or not reports.is_dir():
        return []
    planned = {f.relpath for f in plan.files}
    if not any(pattern.fullmatch(r) for r in planned):
        return []
    out = []
    for name in sorted(_safe_listdir(reports)):
        rel = f"reports/{name}"
        if pattern.fullmatch(rel) and rel not in planned:
            st = os.lstat(reports / name)
            if stat.S_ISREG(st.st_mode):
                out.append(rel)
    return out


class LockBusy(WorkbenchError):
    """Another live writer holds ``reports/.workbench.lock``."""


_step_counter = 0


def _step(_name: str) -> None:
    """Fault-injection point (tests only): SIGKILL self at the N-th step when KILL_ENV=N."""
    global _step_counter
    target = os.environ.get(KILL_ENV)
    if not target:
        return
    _step_counter += 1
    if str(_step_counter) == target.strip():
        os.kill(os.getpid(), signal.SIGKILL)


# --------------------------------------------------------------------------- path safety


def _is_under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_target(kernel_dir: Path, relpath: str) -> Path:
    """Absolute target for ``relpath`` after the safety rules in the module docstring."""
    if not relpath or os.path.isabs(relpath) or "\\" in relpath or "\0" in relpath:
        raise UnsafePath(f"write target {relpath!r} must be a relative path", path=str(kernel_dir))
    parts = relpath.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise UnsafePath(
            f"write target {relpath!r} must not contain '.', '..' or empty parts", path=str(kernel_dir)
        )
    root_real = os.path.realpath(kernel_dir)
    target = Path(kernel_dir, *parts)
    real = os.path.realpath(target)
    if len(parts) == 1:
        if not _TOP_LEVEL_OK.match(parts[0]):
            raise UnsafePath(
                f"write target {relpath!r} is not under reports/ nor one of E's perf logs",
                path=str(kernel_dir),
            )
        if real != os.path.join(root_real, parts[0]):
            raise UnsafePath(
                f"write target {relpath!r} resolves outside the kernel dir: {real}", path=str(target)
            )
        return target
    if parts[0] != "reports":
        raise UnsafePath(f"write target {relpath!r} is not under reports/", path=str(kernel_dir))
    reports_real = os.path.join(root_real, "reports")
    if os.path.realpath(Path(kernel_dir) / "reports") != reports_real:
        raise UnsafePath(
            "reports/ is a symlink pointing outside the kernel dir", path=str(Path(kernel_dir) / "reports")
        )
    if real != os.path.join(root_real, *parts) or not _is_under(real, reports_real):
        raise UnsafePath(f"write target {relpath!r} resolves outside reports/: {real}", path=str(target))
    if any(p.startswith(".workbench") for p in parts[1:]):
        raise UnsafePath(f"write target {relpath!r} collides with the writer's own files", path=str(target))
    return target


def check_plan_paths(plan: ReportPlan) -> list[Path]:
    """All targets of ``plan`` resolved, or UnsafePath; no duplicates."""
    check_kernel_name(plan.kernel)
    if Path(plan.kernel_dir).name != plan.kernel:
        raise UnsafePath(
            f"kernel dir {plan.kernel_dir} does not end in the kernel name {plan.kernel!r}",
            path=str(plan.kernel_dir),
        )
    seen: set[str] = set()
    targets = []
    for f in plan.files:
        if f.relpath in seen:
            raise UnsafePath(
                f"write target {f.relpath!r} appears twice in the plan", path=str(plan.kernel_dir)
            )
        seen.add(f.relpath)
        targets.append(resolve_target(Path(plan.kernel_dir), f.relpath))
    return targets


# --------------------------------------------------------------------------- fsync helpers


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- lock


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child (killed but not yet reaped) holds no lock either
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rpartition(")")[2].split()[0] == "Z":
            return False
    return True


def _check_plain_file(path: Path, what: str) -> None:
    """A lock/breaker/journal is the writer's own regular file: a link or a FIFO/device there is planted."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(
            f"refused: the {what} is a symlink or a special file, not the writer's own; remove it",
            path=str(path),
        )


def _read_lock(path: Path) -> dict[str, object] | None:
    _check_plain_file(path, "lock file")
    try:
        data = json.loads(read_regular(path, kind="lock", cap=64 * 1024))
    except (WorkbenchError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _lock_is_stale(info: dict[str, object] | None, path: Path) -> bool:
    if info is None:
        # unreadable/partial lock (writer died between create and write): stale after a grace period
        try:
            return time.time() - path.stat().st_mtime > 5.0
        except OSError:
            return False
    pid = info.get("pid")
    if info.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    return not _pid_alive(pid)


def _try_break_stale(lock: Path) -> bool:
    """Remove a stale lock under the breaker file; True if the lock is gone now."""
    breaker = lock.with_name(BREAKER_NAME)
    try:
        fd = os.open(breaker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        info = _read_lock(breaker)
        if _lock_is_stale(info, breaker):  # a breaker that died: clear it, next round retries
            with contextlib.suppress(OSError):
                breaker.unlink()
        return False
    try:
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode())
        os.close(fd)
        info = _read_lock(lock)
        if not lock.exists():
            return True
        if _lock_is_stale(info, lock):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            return True
        return False
    finally:
        with contextlib.suppress(OSError):
            breaker.unlink()


@contextlib.contextmanager
def kernel_lock(
    kernel_dir: Path, *, timeout_s: float = 30.0, blocking: bool = True, kernel_fd: int | None = None
) -> Iterator[Path]:
    """Hold ``reports/.workbench.lock`` (created with its parent) for the ``with`` body. The lock file is
    created and removed through ``reports/``'s descriptor (reached from ``kernel_fd``, or the kernel dir
    opened here), so it cannot land outside the kernel dir."""
    reports = Path(kernel_dir) / "reports"
    resolve_target(Path(kernel_dir), "reports/x")  # refuses a symlinked reports/ before mkdir
    own = kernel_fd is None
    kfd = open_kernel_dir(kernel_dir) if kernel_fd is None else kernel_fd
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir("reports", 0o755, dir_fd=kfd)
        rfd = walk_at(kfd, ["reports"], where=str(kernel_dir))
    finally:
        if own:
            os.close(kfd)
    lock = reports / LOCK_NAME
    try:
        _check_plain_file(lock, "lock file")
        _check_plain_file(lock.with_name(BREAKER_NAME), "lock breaker file")
        payload = json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "time": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            }
        ).encode()
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fd = os.open(
                    LOCK_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=rfd
                )
            except FileExistsError:
                info = _read_lock(lock)
                if _lock_is_stale(info, lock) and _try_break_stale(lock):
                    continue
                if not blocking or time.monotonic() > deadline:
                    raise LockBusy(
                        f"another writer holds the lock ({info or 'unreadable'})",
                        path=str(lock),
                        title="Report dir locked",
                    ) from None
                time.sleep(0.02)
                continue
            try:
                os.write(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
            break
        try:
            yield lock
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(LOCK_NAME, dir_fd=rfd)
    finally:
        os.close(rfd)


# --------------------------------------------------------------------------- recovery


def _journal_path(kernel_dir: Path) -> Path:
    return Path(kernel_dir) / "reports" / JOURNAL_NAME


def _recover_locked(kernel_dir: Path) -> str:
    kernel_dir = Path(kernel_dir)
    journal = _journal_path(kernel_dir)
    action = "clean"
    _check_plain_file(journal, "write journal")
    if journal.exists():
        try:
            data = json.loads(read_regular(journal, kind="journal", kernel_dir=kernel_dir))
            entries = data["entries"]
        except (WorkbenchError, ValueError, KeyError, TypeError, RecursionError) as exc:
            raise WorkbenchError(
                f"write journal is unreadable ({exc}); inspect it by hand", path=str(journal)
            ) from None
        for entry in entries:
            target = resolve_target(kernel_dir, entry["target"])  # a tampered journal cannot redirect writes
            temp = kernel_dir / entry["temp"]
            if (
                not isinstance(entry["temp"], str)
                or ".." in entry["temp"].split("/")
                or temp.parent != target.parent
                or TEMP_MARK not in temp.name
            ):
                raise UnsafePath(
                    f"write journal names a temp file outside its target's dir: {entry['temp']!r}",
                    path=str(journal),
                )
            if temp.exists():
                os.replace(temp, target)
                _fsync_dir(target.parent)
        removals = data.get("removals", []) if isinstance(data, dict) else []
        if not isinstance(removals, list) or not all(isinstance(r, str) for r in removals):
            raise WorkbenchError("write journal's removals are not a list of paths", path=str(journal))
        for rel in removals:
            gone = resolve_target(kernel_dir, rel)  # a tampered journal cannot remove outside reports/
            with contextlib.suppress(FileNotFoundError):
                os.unlink(gone)
            _fsync_dir(gone.parent)
        journal.unlink()
        _fsync_dir(journal.parent)
        action = "rolled_forward"
    # uncommitted temps (crash before the journal was committed): the old set is intact; drop them
    for directory in _temp_dirs(kernel_dir):
        with contextlib.suppress(OSError):
            for entry in os.listdir(directory):
                if TEMP_MARK in entry:
                    with contextlib.suppress(OSError):
                        (directory / entry).unlink()
                    if action == "clean":
                        action = "rolled_back"
    return action


def _temp_dirs(kernel_dir: Path) -> list[Path]:
    out = [kernel_dir]
    reports = kernel_dir / "reports"
    if reports.is_dir() and not reports.is_symlink():
        for dirpath, dirnames, _ in os.walk(reports):
            dirnames[:] = [d for d in dirnames if d != BACKUP_DIR_NAME]
            out.append(Path(dirpath))
    return out


def recover(kernel_dir: Path, *, blocking: bool = False) -> str:
    """Finish or undo an interrupted write; returns clean|rolled_forward|rolled_back|busy|absent."""
    kernel_dir = Path(kernel_dir)
    reports = kernel_dir / "reports"
    if not reports.is_dir():
        return "absent"
    _check_plain_file(_journal_path(kernel_dir), "write journal")
    if not (
        _journal_path(kernel_dir).exists()
        or any(TEMP_MARK in e for d in _temp_dirs(kernel_dir) for e in _safe_listdir(d))
    ):
        return "clean"
    try:
        with kernel_lock(kernel_dir, blocking=blocking, timeout_s=5.0):
            return _recover_locked(kernel_dir)
    except LockBusy:
        return "busy"


def _safe_listdir(d: Path) -> list[str]:
    try:
        return os.listdir(d)
    except OSError:
        return []


# --------------------------------------------------------------------------- write


def _backup_root(kernel_dir: Path) -> Path:
    """``reports/.workbench-backup``, refused (UnsafePath) when it is a link or anything but a real dir inside
    ``reports/``: the backup set is a write, under the same confinement rule as the reports themselves."""
    root = Path(kernel_dir) / "reports" / BACKUP_DIR_NAME
    if root.is_symlink() or (root.exists() and not root.is_dir()):
        raise UnsafePath(
            f"refused: {BACKUP_DIR_NAME} is a symlink or not a directory (resolves to "
            f"{os.path.realpath(root)}); move it aside",
            path=str(root),
        )
    confine_write(kernel_dir, root / "x")
    return root


def write_plan(plan: ReportPlan, *, lock_timeout_s: float = 30.0) -> WriteResult:
    """Write every file of ``plan`` atomically (see module docstring); refuses unless ``plan.ok``."""
    try:
        return _write_plan(plan, lock_timeout_s)
    except OSError as exc:
        # disk full, permissions...: the journal/temps make a retry or recover() safe
        raise WorkbenchError(
            f"write failed: {exc.strerror or exc}",
            path=exc.filename or str(plan.kernel_dir),
            title="Write failed",
        ) from None


def _write_plan(plan: ReportPlan, lock_timeout_s: float) -> WriteResult:
    if not plan.ok:
        raise ValidationRefused(
            "validators did not all exit 0; nothing was written\n" + plan.validator_output,
            path=str(plan.kernel_dir),
        )
    check_plan_paths(plan)
    kernel_dir = Path(plan.kernel_dir)
    if not kernel_dir.is_dir():
        raise UnsafePath(
            "kernel dir does not exist (the writer creates nothing outside it)", path=str(kernel_dir)
        )
    # by descriptor from here on (issue 33 §4): the kernel dir is opened once (never through a link),
    # every dir below it is reached with O_NOFOLLOW, and every create/link/rename/unlink is relative
    # to those descriptors, so a swap of the kernel dir, reports/ or any subdir cannot redirect a byte
    kfd = open_kernel_dir(kernel_dir)
    try:
        with kernel_lock(kernel_dir, timeout_s=lock_timeout_s, kernel_fd=kfd):
            _step("locked")
            _recover_locked(kernel_dir)
            _step("recovered")
            return _write_locked(plan, kernel_dir, kfd)
    finally:
        os.close(kfd)


class _Dirs:
    """Descriptors of the dirs of one write, reached from the kernel dir's descriptor (closed at the end)."""

    def __init__(self, kfd: int, where: str) -> None:
        self.kfd, self.where, self.fds = kfd, where, {}  # type: ignore[var-annotated]
        self.made: list[tuple[str, ...]] = []  # dirs this write created (relative parts), for a failed write

    def get(self, parts: tuple[str, ...], *, create: bool = True) -> int:
        if parts not in self.fds:
            fd = self.kfd
            for i in range(len(parts)):
                sub = parts[: i + 1]
                if sub in self.fds:
                    fd = self.fds[sub]
                    continue
                if create:
                    try:
                        os.mkdir(sub[-1], 0o755, dir_fd=fd)
                        self.made.append(sub)
                    except FileExistsError:
                        pass
                nfd = walk_at(fd, [sub[-1]], where=os.path.join(self.where, *sub[:-1]))
                self.fds[sub] = nfd
                fd = nfd
        return int(self.fds[parts])

    def close(self) -> None:
        for fd in self.fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds.clear()


def _fsync_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.fsync(fd)


def _create_at(dfd: int, name: str, data: bytes) -> None:
    """Create ``name`` in ``dfd`` (O_EXCL | O_NOFOLLOW: it is ours) with ``data``; removed again on failure."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)
        raise
    os.close(fd)


def _write_locked(plan: ReportPlan, kernel_dir: Path, kfd: int) -> WriteResult:
    result = WriteResult()
    # re-check after locking: a symlink could have been planted meanwhile (a friendly message; the
    # descriptors below are the guard)
    targets = check_plan_paths(plan)
    stale = stale_set_files(plan)
    stale_targets = [resolve_target(kernel_dir, rel) for rel in stale]
    _backup_root(kernel_dir)
    token = secrets.token_hex(4)
    dirs = _Dirs(kfd, str(kernel_dir))
    entries: list[dict[str, str]] = []
    places: list[tuple[int, str, str]] = []  # (dir fd, temp name, target name) per planned file
    backup_fd: int | None = None
    stamp_name: str | None = None
    jtemp = f"{JOURNAL_NAME}{TEMP_MARK}{token}"
    jtemp_made = False
    try:
        try:
            for f in plan.files:
                parts = tuple(f.relpath.split("/"))
                pfd = dirs.get(parts[:-1]) if len(parts) > 1 else kfd
                temp = f".{parts[-1]}{TEMP_MARK}{token}"
                _create_at(pfd, temp, f.content.encode("utf-8", "surrogateescape"))
                places.append((pfd, temp, parts[-1]))
                entries.append({"target": f.relpath, "temp": "/".join((*parts[:-1], temp))})
            for pfd in {pl[0] for pl in places}:
                _fsync_fd(pfd)
            _step("temp_written")
            existing = [
                (f.relpath, pl[0], pl[2])
                for f, pl in zip(plan.files, places, strict=True)
                if _is_regular_at(pl[0], pl[2])
            ]
            rfd = dirs.get(("reports",))
            existing += [(rel, rfd, rel.split("/")[-1]) for rel in stale]
            if existing:
                broot = dirs.get(("reports", BACKUP_DIR_NAME))
                stamp_name = _stamp_at(broot)
                os.mkdir(stamp_name, 0o755, dir_fd=broot)
                result.backup_dir = kernel_dir / "reports" / BACKUP_DIR_NAME / stamp_name
                backup_fd = walk_at(broot, [stamp_name], where=str(result.backup_dir))
                for rel, sfd, name in existing:
                    bparts = rel.split("/")
                    bfd = walk_at(backup_fd, bparts[:-1], where=str(result.backup_dir), create=True)
                    try:
                        _backup_at(sfd, name, bfd, bparts[-1])
                    finally:
                        os.close(bfd)
            _step("backup_made")
            rfd = dirs.get(("reports",))
            _create_at(
                rfd,
                jtemp,
                json.dumps(
                    {
                        "version": 1,
                        "entries": entries,
                        "removals": stale,
                        "backup_dir": str(result.backup_dir or ""),
                    }
                ).encode(),
            )
            jtemp_made = True
            _step("journal_temp")
        except BaseException:
            # nothing committed: the old set is intact, so everything this attempt made goes (a full disk
            # must not leave partial temps or a half-filled backup dir for the next command to clean)
            for pfd, temp, _name in places:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=pfd)
            if jtemp_made:
                with contextlib.suppress(OSError):
                    os.unlink(jtemp, dir_fd=dirs.get(("reports",), create=False))
            if stamp_name is not None:
                with contextlib.suppress(OSError):
                    broot = dirs.get(("reports", BACKUP_DIR_NAME), create=False)
                    _rmtree_at(broot, stamp_name)
                    if ("reports", BACKUP_DIR_NAME) in dirs.made:
                        os.rmdir(BACKUP_DIR_NAME, dir_fd=dirs.get(("reports",), create=False))
            for sub in sorted(dirs.made, key=len, reverse=True):
                with contextlib.suppress(OSError):
                    parent = dirs.get(sub[:-1], create=False) if len(sub) > 1 else kfd
                    os.rmdir(sub[-1], dir_fd=parent)  # only when empty
            raise
        rfd = dirs.get(("reports",))
        os.replace(jtemp, JOURNAL_NAME, src_dir_fd=rfd, dst_dir_fd=rfd)  # commit point
        _fsync_fd(rfd)
        _step("journal_committed")
        for pfd, temp, name in places:
            os.replace(temp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
        for rel in stale:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(rel.split("/")[-1], dir_fd=rfd)
        for pfd in {*(pl[0] for pl in places), rfd}:
            _fsync_fd(pfd)
        result.removed = stale_targets
        _step("renamed")
        os.unlink(JOURNAL_NAME, dir_fd=rfd)
        _fsync_fd(rfd)
        _step("journal_removed")
        result.written = list(targets)
    finally:
        if backup_fd is not None:
            os.close(backup_fd)
        dirs.close()
    _step("unlocked")
    return result


def _is_regular_at(dfd: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _stamp_at(broot: int) -> str:
    base = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    cand, n = base, 1
    while True:
        try:
            os.stat(cand, dir_fd=broot, follow_symlinks=False)
        except FileNotFoundError:
            return cand
        cand = f"{base}-{n}"
        n += 1


def _backup_at(sfd: int, name: str, bfd: int, bname: str) -> None:
    """The old file into the backup dir: a hard link (the old inode survives the rename), else a copy;
    both by descriptor, the source never followed through a link."""
    try:
        os.link(name, bname, src_dir_fd=sfd, dst_dir_fd=bfd, follow_symlinks=False)
        return
    except OSError:
        pass
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=sfd)
    try:
        chunks = []
        while chunk := os.read(src, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(src)
    _create_at(bfd, bname, b"".join(chunks))


def _rmtree_at(dfd: int, name: str) -> None:
    """Remove the dir ``name`` of ``dfd`` and everything in it, by descriptor (no link followed)."""
    sub = walk_at(dfd, [name], where=name)
    try:
        for entry in os.listdir(sub):
            st = os.stat(entry, dir_fd=sub, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                _rmtree_at(sub, entry)
            else:
                os.unlink(entry, dir_fd=sub)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=dfd)
