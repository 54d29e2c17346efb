"""Which kernels a user can open or run, and the close matches of a name that is none of them (issue 36).

Contract:
- :func:`recorded_kernels` — the kernel dirs of the embedded recorded sessions
  (``profiles/*/session/<kernel>/``), sorted.
- :func:`out_root_kernels` — the kernel dirs directly under an out root (a directory holding a
  ``reports/`` or ``workbench/`` folder or a ``session.json``/``analysis.json``; hidden names and
  names that are not valid kernel names (``confine.KERNEL_NAME_RE``) are skipped), sorted.
- :func:`tilegym_kernels` — TileGym's kernels with a cutile-rs wrapper:
  ``src/tilegym/ops/cutile_rs/<kernel>.py`` for which ``tests/ops/**/test_<kernel>.py`` exists, as
  ``{kernel: test file}``; an unreadable or absent tree is ``{}``.
- :func:`close_kernels` — up to three names of those sources closest to ``name`` (difflib), for the
  "unknown kernel" message (``recorded=False``: the out root's and TileGym's only); never raises.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from cutile_workbench.artifacts.confine import KERNEL_NAME_MAX, KERNEL_NAME_RE

_PROFILES_DIR = Path(__file__).resolve().parent.parent / "profiles"
_KERNEL_DIR_MARKERS = ("reports", "workbench", "session.json", "analysis.json")
WRAPPERS_DIR = Path("src/tilegym/ops/cutile_rs")


def recorded_kernels() -> list[str]:
    try:
        return sorted(
            {p.name for p in _PROFILES_DIR.glob("*/session/*") if p.is_dir() and not p.name.startswith(".")}
        )
    except OSError:
        return []


def out_root_kernels(out_root: Path) -> list[str]:
    try:
        entries = list(Path(out_root).iterdir())
    except OSError:
        return []
    found = []
    for p in entries:
        if p.name.startswith(".") or not (
            KERNEL_NAME_RE.fullmatch(p.name) and len(p.name) <= KERNEL_NAME_MAX
        ):
            continue
        try:
            if p.is_dir() and any((p / m).exists() for m in _KERNEL_DIR_MARKERS):
                found.append(p.name)
        except OSError:
            continue
    return sorted(found)


def tilegym_kernels(tilegym: Path) -> dict[str, Path]:
    wrappers_dir = Path(tilegym) / WRAPPERS_DIR
    ops = Path(tilegym) / "tests" / "ops"
    try:
        wrappers = {p.stem for p in wrappers_dir.glob("*.py") if not p.name.startswith("_")}
        tests: dict[str, Path] = {}
        for t in sorted(ops.rglob("test_*.py")):
            tests.setdefault(t.stem[len("test_") :], t)
    except OSError:
        return {}
    return {k: tests[k] for k in sorted(wrappers) if k in tests}


def close_kernels(
    name: str, *, out_root: Path | None = None, tilegym: Path | None = None, recorded: bool = True
) -> list[str]:
    known = set(recorded_kernels()) if recorded else set()
    if out_root is not None:
        known.update(out_root_kernels(out_root))
    if tilegym is not None:
        known.update(tilegym_kernels(tilegym))
    if recorded:
        from cutile_workbench.profiles import list_profiles

        known.update(p.kernel for p in list_profiles())
    return difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
