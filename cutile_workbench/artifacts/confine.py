"""The one confinement rule for every path read or written under a kernel dir, and guarded reads.

Contract (every reader and writer of a kernel dir calls these; nothing else decides):

- :func:`check_kernel_name`: a kernel name is a full match of ``[A-Za-z0-9_.-]+``, not ``.``/``..``,
  at most :data:`KERNEL_NAME_MAX` characters; else :class:`~cutile_workbench.errors.UnsafePath` (key
  ``kernel``, exit 2). ``re.fullmatch`` so a trailing newline (``"nl\\n"``) is refused too.
- :func:`confine_read` — a path read under a kernel dir must, resolved with every symlink followed
  (``os.path.realpath``), stay inside the resolved kernel dir. :func:`confine_write` — a path the
  app writes must resolve inside ``reports/``, be one of E's perf logs at the top level
  (``perf_cutile_rs[_<variant>].txt``; :data:`TOP_LEVEL_WRITES`), or lie in the workbench's own
  evidence dir ``workbench/`` (history store, IR filing, probes), itself not a link out. Either
  refuses with ``UnsafePath`` naming the offending path and where it resolves.
- :func:`in_recorded_sessions`: a path (resolved) inside the installed ``profiles`` package — the
  recorded sessions, read-only for every command.
- :func:`read_regular` reads one input file: refused (``InputError`` naming the file) unless it is
  a regular file (FIFOs, devices, sockets and directories are refused *before* opening, by
  ``stat``; the open uses ``O_NONBLOCK`` and the opened file is checked again, so a swap between
  the two cannot hang), refused over the size cap of its kind (:data:`SIZE_CAPS`), confined with
  :func:`confine_read` when ``kernel_dir`` is given. It never reads more than cap + 1 bytes.
- Confinement by file descriptor (race-free; the path checks above are a first, friendlier
  message): :func:`open_kernel_dir` opens the kernel dir once (its parents as the user named them,
  the kernel dir itself with ``O_NOFOLLOW``: a kernel dir swapped for a link is refused), and
  :func:`walk_at` reaches a subdir from that descriptor one component at a time with
  ``O_NOFOLLOW | O_DIRECTORY`` (``create=True`` makes missing dirs with ``mkdir(dir_fd=)``), so a
  link planted anywhere on the way, before or during the walk, is refused, never followed.
  :func:`read_at` opens one file in such a dir with ``O_NOFOLLOW | O_NONBLOCK``, ``fstat``s it
  (regular, within the cap) and reads at most cap + 1 bytes; :func:`replace_at` writes a temp file
  (``O_CREAT | O_EXCL | O_NOFOLLOW``) in the same dir descriptor, fsyncs it and renames it over
  the target with ``src_dir_fd``/``dst_dir_fd`` = that descriptor: the bytes can only land in the
  dir that was walked. A target that is a link or a special file is refused; a rename never
  writes through a hard link (the other name keeps the old inode). :func:`read_confined` and
  :func:`write_confined` are the two in one call (relative path under the kernel dir).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from cutile_workbench.errors import InputError, UnsafePath
from cutile_workbench.infra.paths import dir_at, file_type, read_at, replace_at, split_relpath
from cutile_workbench.infra.paths import is_inside as is_inside  # re-exported: the one rule
from cutile_workbench.infra.paths import under as _under

KERNEL_NAME_RE = re.compile(r"[A-Za-z0-9_.-]+")
#: NAME_MAX is 255 bytes; every artifact name adds a prefix/suffix to the kernel name, so stay well below
KERNEL_NAME_MAX = 128
#: E's perf logs and F's blocked marker: the only files written at the top of a kernel dir
TOP_LEVEL_WRITES = re.compile(r"(perf_cutile_rs(_[A-Za-z0-9_.-]+)?\.txt|SKILL_METHODOLOGY_BLOCKED\.txt)")
#: the workbench's own evidence dir (history store, IR filing, probes), relative to the kernel dir
WORKBENCH_DIR = "workbench"

MiB = 1024 * 1024
#: per input kind, the largest file read (real inputs are far smaller; bigger is refused unread)
SIZE_CAPS: dict[str, int] = {
    "perf log": 256 * MiB,  # a raw pytest tee with every sample of a long suite
    "session.json": 16 * MiB,
    "analysis.json": 16 * MiB,
    "IR index": 16 * MiB,
    "IR file": 32 * MiB,  # cutile_workbench.ir.loader.MAX_IR_BYTES
    "launches": 512 * MiB,  # gzip JSON of every per-launch record
    "keymap": 1 * MiB,
    "journal": 16 * MiB,
    "event stream": 256 * MiB,
    "lock": 64 * 1024,
    "JSON": 64 * MiB,
}


def check_kernel_name(kernel: object) -> str:
    """``kernel`` if it is a safe kernel name (see module contract), else UnsafePath (key ``kernel``)."""
    if not isinstance(kernel, str):
        raise UnsafePath(f"kernel name {kernel!r} is not a string", key="kernel")
    if len(kernel) > KERNEL_NAME_MAX:
        raise UnsafePath(
            f"kernel name is {len(kernel)} characters long (limit {KERNEL_NAME_MAX})", key="kernel"
        )
    if not KERNEL_NAME_RE.fullmatch(kernel) or kernel in (".", ".."):
        raise UnsafePath(f"kernel name {kernel!r} is not a plain identifier ([A-Za-z0-9_.-]+)", key="kernel")
    return kernel


def confine_read(kernel_dir: Path | str, path: Path | str) -> Path:
    """``path`` unchanged when it resolves inside ``kernel_dir``; UnsafePath naming it otherwise."""
    real = os.path.realpath(path)
    if not _under(real, os.path.realpath(kernel_dir)):
        raise UnsafePath(f"refused: resolves outside the kernel dir {kernel_dir} (to {real})", path=str(path))
    return Path(path)


def confine_write(kernel_dir: Path | str, path: Path | str) -> Path:
    """``path`` unchanged when the app may write it (see module contract); UnsafePath otherwise."""
    root_real = os.path.realpath(kernel_dir)
    real = os.path.realpath(path)
    areas = [os.path.join(root_real, "reports"), os.path.join(root_real, WORKBENCH_DIR)]
    for name in ("reports", WORKBENCH_DIR):  # the area itself must not be a link out of the kernel dir
        area = Path(kernel_dir) / name
        if os.path.realpath(area) != os.path.join(root_real, name) and _under(real, os.path.realpath(area)):
            raise UnsafePath(
                f"refused: {name}/ resolves outside the kernel dir (to {os.path.realpath(area)})",
                path=str(area),
            )
    if any(_under(real, a) and real != a for a in areas):
        return Path(path)
    if os.path.dirname(real) == root_real and TOP_LEVEL_WRITES.fullmatch(os.path.basename(real)):
        return Path(path)
    raise UnsafePath(
        f"refused: write target resolves outside the kernel dir's write areas (reports/, "
        f"workbench/, E's perf logs) of {kernel_dir} (to {real})",
        path=str(path),
    )


def recorded_sessions_dir() -> Path | None:
    """The installed ``profiles`` package dir (holding the recorded sessions), or None."""
    try:
        from cutile_workbench import profiles
    except ImportError:
        return None
    return Path(profiles.__file__).resolve().parent


def in_recorded_sessions(path: Path | str) -> bool:
    """``path`` (resolved) lies inside the installed ``profiles`` package: read-only for every command."""
    base = recorded_sessions_dir()
    return base is not None and is_inside(path, base)


def read_regular(
    path: Path | str, *, kind: str, kernel_dir: Path | str | None = None, cap: int | None = None
) -> bytes:
    """The bytes of one input file after the checks of the module contract (``InputError``/``UnsafePath``)."""
    return b"".join(iter_regular(path, kind=kind, kernel_dir=kernel_dir, cap=cap))


def iter_regular(
    path: Path | str, *, kind: str, kernel_dir: Path | str | None = None, cap: int | None = None
) -> Iterator[bytes]:
    """:func:`read_regular` in chunks of at most 1 MiB (a streaming reader holds one chunk, not the file).

    The checks run before the first chunk is yielded; the size cap is checked as the file is read."""
    p = Path(path)
    limit = cap if cap is not None else SIZE_CAPS.get(kind, SIZE_CAPS["JSON"])
    if kernel_dir is not None:
        confine_read(kernel_dir, p)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"cannot read {kind}: no such file", path=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read {kind}: {exc.strerror or exc}", path=str(p)) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"{kind} is not a regular file ({file_type(st.st_mode)}): refused unread", path=str(p)
        )
    if st.st_size > limit:
        raise InputError(
            f"{kind} is {st.st_size:,} bytes, over the {limit:,}-byte limit: refused unread", path=str(p)
        )
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise InputError(f"cannot read {kind}: {exc.strerror or exc}", path=str(p)) from None
    try:
        st2 = os.fstat(fd)
        if not stat.S_ISREG(st2.st_mode) or (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            raise InputError(
                f"{kind} changed while opening it (now {file_type(st2.st_mode)}): refused", path=str(p)
            )
        total = 0
        while True:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as exc:
                raise InputError(f"cannot read {kind}: {exc.strerror or exc}", path=str(p)) from None
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise InputError(
                    f"{kind} grew past the {limit:,}-byte limit while reading: refused", path=str(p)
                )
            yield chunk
    except OSError as exc:
        raise InputError(f"cannot read {kind}: {exc.strerror or exc}", path=str(p)) from None
    finally:
        os.close(fd)


def read_regular_text(
    path: Path | str, *, kind: str, kernel_dir: Path | str | None = None, cap: int | None = None
) -> str:
    """:func:`read_regular` decoded as UTF-8; invalid UTF-8 is an ``InputError`` naming file and line."""
    data = read_regular(path, kind=kind, kernel_dir=kernel_dir, cap=cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{kind}: invalid UTF-8 at byte {exc.start}", path=str(path), line=line) from None


# --------------------------------------------------------------------------- by file descriptor


def read_confined(kernel_dir: Path | str, relpath: str | Path, *, kind: str, cap: int | None = None) -> bytes:
    """The bytes of ``kernel_dir/relpath`` reached by descriptor (module contract); no link followed."""
    where = os.path.join(str(kernel_dir), str(relpath))
    parts = split_relpath(relpath, where=where)
    with dir_at(kernel_dir, parts[:-1]) as fd:
        limit = cap if cap is not None else SIZE_CAPS.get(kind, SIZE_CAPS["JSON"])
        return read_at(fd, parts[-1], kind=kind, where=where, cap=limit)[0]


def write_confined(
    kernel_dir: Path | str,
    relpath: str | Path,
    data: bytes,
    *,
    keep_mode: bool = False,
    create_dirs: bool = True,
) -> None:
    """Replace ``kernel_dir/relpath`` atomically, by descriptor (module contract); no link followed."""
    where = os.path.join(str(kernel_dir), str(relpath))
    parts = split_relpath(relpath, where=where)
    with dir_at(kernel_dir, parts[:-1], create=create_dirs) as fd:
        replace_at(fd, parts[-1], data, where=where, keep_mode=keep_mode)
