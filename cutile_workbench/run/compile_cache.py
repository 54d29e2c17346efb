"""A compile cache shared by runs and scale-out shards (``run --compile-cache DIR``), and the
cold/warm split each run records.

Why: a first run on a fresh machine pays the JIT compile of every autotune config (a real 4-config
bmm: 48-67 s cold vs 23-32 s warm); shards on other nodes pay it again unless they share a cache on
the shared filesystem.

Contract:
- :func:`cache_env` points each toolchain's own disk cache into ``DIR``: cuTile Python's
  bytecode-to-cubin cache (``CUDA_TILE_CACHE_DIR`` → ``DIR/cuda_tile``), Triton's
  (``TRITON_CACHE_DIR`` → ``DIR/triton``) and TileGym's TileCpp cubins (``TILECPP_CACHE_DIR`` →
  ``DIR/tilecpp``). A variable the user set explicitly (``--env``) wins. cutile-rs compiles through
  ``tileiras`` on the first call per config and keeps no disk cache we can point: its compiles are
  paid per process, whatever ``DIR`` holds (the split says so).
- :func:`census` counts the files (and bytes) under each toolchain's subdir; :func:`split` turns a
  before/after pair into what ``session.json`` records per run under ``compile_cache``: the dir, the
  counts, the files the run added per toolchain, and ``state``: ``cold`` (the cache was empty and the
  run filled it: every compile paid), ``warm`` (nothing new: every compile served from the cache),
  ``partial`` (some new entries), ``unused`` (no toolchain wrote there).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: toolchain subdir → the environment variable that moves its disk cache
TOOLCHAINS: Mapping[str, str] = {
    "cuda_tile": "CUDA_TILE_CACHE_DIR",
    "triton": "TRITON_CACHE_DIR",
    "tilecpp": "TILECPP_CACHE_DIR",
}


def cache_env(root: Path | str, explicit: Mapping[str, str] = {}) -> dict[str, str]:
    """The variables that point every toolchain's cache under ``root`` (explicit ones kept)."""
    base = Path(root).resolve()
    return {var: str(base / sub) for sub, var in TOOLCHAINS.items() if var not in explicit}


def prepare(root: Path | str) -> None:
    """Create ``root`` and its toolchain subdirs (a shared dir: group-writable as umask allows)."""
    for sub in TOOLCHAINS:
        (Path(root) / sub).mkdir(parents=True, exist_ok=True)


def census(root: Path | str) -> dict[str, dict[str, int]]:
    """``{toolchain: {"files": n, "bytes": b}}`` under ``root`` (missing dirs count 0)."""
    out: dict[str, dict[str, int]] = {}
    for sub in TOOLCHAINS:
        files = size = 0
        for dirpath, _dirs, names in os.walk(Path(root) / sub):
            for name in names:
                try:
                    size += os.stat(os.path.join(dirpath, name)).st_size
                except OSError:
                    continue
                files += 1
        out[sub] = {"files": files, "bytes": size}
    return out


def split(
    root: Path | str, before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]
) -> dict[str, Any]:
    """What one run did to the cache (see module contract)."""
    added = {sub: max(0, after[sub]["files"] - before[sub]["files"]) for sub in TOOLCHAINS}
    had = sum(v["files"] for v in before.values())
    new = sum(added.values())
    if new == 0:
        state = "warm" if had else "unused"
    else:
        state = "cold" if had == 0 else "partial"
    return {
        "dir": str(Path(root).resolve()),
        "state": state,
        "before": {k: dict(v) for k, v in before.items()},
        "after": {k: dict(v) for k, v in after.items()},
        "added_files": added,
        "note": "cutile-rs (tileiras) keeps no disk cache: its compiles are paid in every process",
    }
