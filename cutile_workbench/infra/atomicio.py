"""Atomic single-file writes inside a kernel dir (temp file in the same dir + fsync + ``os.replace``).

Contract: :func:`atomic_write_bytes` never leaves a half-written file at ``path`` (readers see the
old bytes or the new ones) and refuses any target that resolves, symlinks included, outside
``root`` (:class:`~cutile_workbench.errors.UnsafePath`). Imports nothing but the errors and confine modules,
so every core module that files evidence (runner, IR filing, probes, scale-out) can use it without a
cycle.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from cutile_workbench.artifacts.confine import is_inside
from cutile_workbench.errors import UnsafePath


def ensure_inside(path: Path, root: Path) -> None:
    """Raise UnsafePath unless ``path`` (symlinks resolved) lies inside ``root`` (the test is
    :func:`cutile_workbench.artifacts.confine.is_inside`, the one confinement rule)."""
    if not is_inside(path, root):
        raise UnsafePath(f"write target resolves outside the kernel dir {os.path.realpath(root)}", path=path)


def atomic_write_bytes(path: Path, data: bytes, root: Path) -> None:
    """Write ``data`` to ``path`` via a temp file in the same dir + fsync + ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    ensure_inside(path, root)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
