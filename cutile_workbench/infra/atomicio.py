"""Atomic single-file writes inside a kernel dir (temp file in the same dir + fsync + ``os.replace``).

Contract: :func:`atomic_write_bytes` is THE atomic write of the package: it never leaves a
half-written file at ``path`` (readers see the old bytes or the new ones), refuses any target that
resolves, symlinks included, outside ``root`` (:class:`~cutile_workbench.errors.UnsafePath`) —
``root=None`` only for a file the user named on the command line (``--perfetto FILE``) or a TileGym
test file being edited — and with ``keep_mode`` gives the new file the old one's permission bits.
Imports nothing but the errors module and :mod:`.paths` (the one is-inside rule), so every module that files evidence (runner, IR filing,
probes, scale-out, the wiring edit, the timeline export) uses it without a cycle.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from cutile_workbench.errors import UnsafePath
from cutile_workbench.infra.paths import is_inside


def ensure_inside(path: Path, root: Path) -> None:
    """Raise UnsafePath unless ``path`` (symlinks resolved) lies inside ``root`` (the test is
    :func:`cutile_workbench.infra.paths.is_inside`, the one confinement rule)."""
    if not is_inside(path, root):
        raise UnsafePath(f"write target resolves outside the kernel dir {os.path.realpath(root)}", path=path)


def atomic_write_bytes(path: Path, data: bytes, root: Path | None, *, keep_mode: bool = False) -> None:
    """Write ``data`` to ``path`` via a temp file in the same dir + fsync + ``os.replace``."""
    path = Path(path)
    if root is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        ensure_inside(path, root)
    mode = path.stat().st_mode & 0o7777 if keep_mode and path.exists() else None
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
