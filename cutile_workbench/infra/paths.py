"""Is a path inside a directory, and reaching files under a directory by descriptor: the confinement rules.

Contract: :func:`is_inside` resolves both paths (``os.path.realpath``: every symlink followed) and
says whether ``path`` is ``root`` or lies below it; :func:`under` is the same test on resolved
strings. Pure (no I/O beyond resolving), so the lowest layer (atomic writes) and the artifact
confinement (:mod:`cutile_workbench.artifacts.confine`) share it.

By descriptor (race-free: a path check is a friendlier first message, never the guard):
:func:`open_kernel_dir` opens a kernel dir once (its parents as the user named them, the kernel dir
itself with ``O_NOFOLLOW``: a kernel dir swapped for a link is refused); :func:`walk_at` reaches a
subdir from a descriptor one component at a time with ``O_NOFOLLOW | O_DIRECTORY`` (``create=True``
makes the missing ones with ``mkdir(dir_fd=)``), so a link planted on the way, before or during the
walk, is refused (``UnsafePath``), never followed; :func:`read_at` opens one file of such a dir with
``O_NOFOLLOW | O_NONBLOCK``, ``fstat``s it (regular, within the cap) and reads at most cap + 1
bytes; :func:`replace_at` writes a temp file (``O_CREAT | O_EXCL | O_NOFOLLOW``) in the same
descriptor, fsyncs it and renames it over the target with ``src_dir_fd = dst_dir_fd`` = that
descriptor, so the bytes can only land in the dir that was walked. A target that is a link or a
special file is refused; a rename never writes through a hard link (the other name keeps the old
inode), and nothing in the package writes a file in place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from cutile_workbench.errors import InputError, UnsafePath, WorkbenchError


def under(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def is_inside(path: Path | str, root: Path | str) -> bool:
    """``path`` resolved (symlinks followed) lies inside ``root`` resolved (or is it)."""
    return under(os.path.realpath(path), os.path.realpath(root))


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = (
    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)
#: a component name the walk accepts: one plain name (no separator, not . or ..)
_PART_RE = re.compile(r"[^/\0]+")


def split_relpath(relpath: str | Path, *, where: str) -> list[str]:
    """``relpath`` as its components; UnsafePath unless it is a plain relative path (no ``.``/``..``)."""
    text = str(relpath)
    parts = text.split("/")
    if (
        not text
        or os.path.isabs(text)
        or any(p in ("", ".", "..") or not _PART_RE.fullmatch(p) for p in parts)
    ):
        raise UnsafePath(f"refused: {text!r} is not a plain relative path under the kernel dir", path=where)
    return parts


def _refusal(exc: OSError, what: str, where: str) -> UnsafePath | InputError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return UnsafePath(f"refused: {what} is a symlink or not a directory (nothing followed)", path=where)
    return InputError(f"cannot open {what}: {exc.strerror or exc}", path=where)


def open_kernel_dir(kernel_dir: Path | str) -> int:
    """A descriptor of ``kernel_dir`` (module contract): its last component is never a link."""
    kd = Path(kernel_dir)
    try:
        parent = os.open(kd.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(
            f"cannot open the kernel dir's parent: {exc.strerror or exc}", path=str(kd.parent)
        ) from None
    try:
        return os.open(kd.name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        raise _refusal(exc, "the kernel dir", str(kd)) from None
    finally:
        os.close(parent)


def walk_at(dir_fd: int, parts: list[str], *, where: str, create: bool = False) -> int:
    """A new descriptor of ``dir_fd``/``parts`` (each step ``O_NOFOLLOW | O_DIRECTORY``); the caller closes it."""
    fd = os.dup(dir_fd)
    here = where
    try:
        for part in parts:
            here = os.path.join(here, part)
            if create:
                with contextlib.suppress(FileExistsError):
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except OSError as exc:
                        if exc.errno != errno.EEXIST:
                            raise InputError(f"cannot create dir: {exc.strerror or exc}", path=here) from None
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                raise InputError("no such directory", path=here) from None
            except OSError as exc:
                raise _refusal(exc, f"{part}/", here) from None
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def dir_at(kernel_dir: Path | str, subdir: list[str], *, create: bool = False) -> Iterator[int]:
    """``open_kernel_dir`` + ``walk_at`` for the ``with`` body (the descriptor is closed after)."""
    root = open_kernel_dir(kernel_dir)
    try:
        fd = walk_at(root, subdir, where=str(kernel_dir), create=create)
    finally:
        os.close(root)
    try:
        yield fd
    finally:
        os.close(fd)


def read_at(dir_fd: int, name: str, *, kind: str, where: str, cap: int) -> tuple[bytes, os.stat_result]:
    """The bytes of regular file ``name`` in ``dir_fd`` (never a link, FIFO or device; at most ``cap``)."""
    limit = cap
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise InputError(f"cannot read {kind}: no such file", path=where) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(f"refused: the {kind} is a symlink (not followed)", path=where) from None
        raise InputError(f"cannot read {kind}: {exc.strerror or exc}", path=where) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"{kind} is not a regular file ({file_type(st.st_mode)}): refused unread", path=where
            )
        if st.st_size > limit:
            raise InputError(
                f"{kind} is {st.st_size:,} bytes, over the {limit:,}-byte limit: refused unread", path=where
            )
        return _read_capped(fd, limit, kind, where), st
    except OSError as exc:
        raise InputError(f"cannot read {kind}: {exc.strerror or exc}", path=where) from None
    finally:
        os.close(fd)


def _read_capped(fd: int, limit: int, kind: str, where: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputError(f"{kind} grew past the {limit:,}-byte limit while reading: refused", path=where)


def replace_at(dir_fd: int, name: str, data: bytes, *, where: str, keep_mode: bool = False) -> None:
    """Write ``data`` to ``name`` in ``dir_fd``: temp file + fsync + rename, both in that descriptor."""
    if not _PART_RE.fullmatch(name) or name in (".", ".."):
        raise UnsafePath(f"refused: {name!r} is not a plain file name", path=where)
    mode = 0o644
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(
                f"refused: the write target is {file_type(st.st_mode)}"
                ", not a regular file (nothing followed)",
                path=where,
            )
        if keep_mode:
            mode = st.st_mode & 0o7777
    tmp = f".{name[:200]}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        fd = os.open(tmp, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    except OSError as exc:  # a full disk, a dir removed meanwhile: named, the old bytes kept
        raise WorkbenchError(f"write failed: {exc.strerror or exc}", path=where) from None
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def file_type(mode: int) -> str:
    """``a FIFO``, ``a directory``…: what a mode is, for refusals."""
    for test, name in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISREG, "a regular file"),
    ):
        if test(mode):
            return name
    return "a special file"
