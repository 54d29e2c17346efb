"""Atomic single-file writes inside a kernel dir (temp file in the same dir + fsync + ``os.replace``).

Contract: :func:`atomic_write_bytes` is THE atomic write of the package: it never leaves a
half-written file at ``path`` (readers see the old bytes or the new ones). With a ``root`` (the
kernel dir) the write is confined by descriptor (:mod:`cutile_workbench.infra.paths`): ``path``
must lie lexically under ``root`` (no ``..``), ``root`` is opened once (itself never a link),
every dir below it is reached with ``O_NOFOLLOW | O_DIRECTORY`` (missing ones created that way),
and the temp file and the rename live in that same dir descriptor, so a link planted or swapped in
at any moment is refused (:class:`~cutile_workbench.errors.UnsafePath`), never followed; a target
that is a link or a special file is refused too. ``root=None`` only for a file the user named on
the command line (``--perfetto FILE``), a TileGym test file being edited, or a cache in the user's
cache dir. ``keep_mode`` gives the new file the old one's permission bits; ``durable=False`` (caches)
skips the fsync. Imports nothing but the errors module and :mod:`.paths`,
so every module that files evidence (runner, IR filing, probes, scale-out, the wiring edit, the
timeline export) uses it without a cycle.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from cutile_workbench.errors import UnsafePath
from cutile_workbench.infra.paths import dir_at, is_inside, replace_at, split_relpath


def ensure_inside(path: Path, root: Path) -> None:
    """Raise UnsafePath unless ``path`` (symlinks resolved) lies inside ``root`` (the test is
    :func:`cutile_workbench.infra.paths.is_inside`; a friendly early message, the guard is the
    descriptor walk of :func:`atomic_write_bytes`)."""
    if not is_inside(path, root):
        raise UnsafePath(f"write target resolves outside the kernel dir {os.path.realpath(root)}", path=path)


def relpath_under(path: Path | str, root: Path | str) -> str:
    """``path`` relative to ``root``, lexically (no link resolved); UnsafePath when it is not below it."""
    p, r = os.path.normpath(os.path.abspath(path)), os.path.normpath(os.path.abspath(root))
    if os.path.normpath(os.path.join(os.path.abspath(root), os.path.relpath(path, root))) != p or not (
        p.startswith(r.rstrip(os.sep) + os.sep)
    ):
        raise UnsafePath(f"write target is not below the kernel dir {root}", path=str(path))
    rel = os.path.relpath(p, r)
    if rel.split(os.sep)[0] == ".." or ".." in Path(path).parts:
        raise UnsafePath(f"write target is not below the kernel dir {root}", path=str(path))
    return rel.replace(os.sep, "/")


def atomic_write_bytes(
    path: Path, data: bytes, root: Path | None, *, keep_mode: bool = False, durable: bool = True
) -> None:
    """Write ``data`` to ``path`` via a temp file in the same dir + fsync + ``os.replace``.

    ``durable=False`` (unconfined writes only: a cache in the user's cache dir) skips the fsync: a
    crash may then lose the new bytes, never leave half of them."""
    path = Path(path)
    if root is not None:
        root = Path(root)
        parts = split_relpath(relpath_under(path, root), where=str(path))
        if not root.exists() and not root.is_symlink():
            root.mkdir(parents=True, exist_ok=True)  # the kernel dir itself, as the user named it
        with dir_at(root, parts[:-1], create=True) as fd:
            replace_at(fd, parts[-1], data, where=str(path), keep_mode=keep_mode)
        return
    with atomic_writer(path, keep_mode=keep_mode, durable=durable) as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_writer(path: Path, *, keep_mode: bool = False, durable: bool = True) -> Iterator[BinaryIO]:
    """The unconfined (``root=None``) form of :func:`atomic_write_bytes` for a writer that streams
    (a large cache file written without an in-memory copy of it): the file object of a temp file
    beside ``path``, renamed over it when the block ends without an exception; removed otherwise."""
    path = Path(path)
    mode = path.stat().st_mode & 0o7777 if keep_mode and path.exists() else None
    tmp = path.with_name(f"{TEMP_PREFIX}{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


#: the temp file of an unconfined atomic write is ``<TEMP_PREFIX><name>.tmp-<pid>-<thread>`` beside it
TEMP_PREFIX = "."
