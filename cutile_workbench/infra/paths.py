"""Is a path inside a directory, symlinks followed: the one rule every confinement check uses.

Contract: :func:`is_inside` resolves both paths (``os.path.realpath``: every symlink followed) and
says whether ``path`` is ``root`` or lies below it; :func:`under` is the same test on resolved
strings. Pure (no I/O beyond resolving), so the lowest layer (atomic writes) and the artifact
confinement (:mod:`cutile_workbench.artifacts.confine`) share it.
"""

from __future__ import annotations

import os
from pathlib import Path


def under(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def is_inside(path: Path | str, root: Path | str) -> bool:
    """``path`` resolved (symlinks followed) lies inside ``root`` resolved (or is it)."""
    return under(os.path.realpath(path), os.path.realpath(root))
