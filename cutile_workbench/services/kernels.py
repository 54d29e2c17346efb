"""``kernels``: what a user can open or run here, and with which recorded data (issue 36).

Contract: :func:`list_kernels` returns one :class:`KernelEntry` per kernel name found in any of
four places — the out root's kernel dirs (``--out-root``, else ``$CUTILE_KERNEL_OUT_ROOT``), the
embedded recorded sessions, the built-in profiles, and (with a TileGym checkout) TileGym's kernels
that have a cutile-rs wrapper and a ``tests/ops`` file — sorted by name, each saying where it was
found, whether a session is recorded for it (out root or embedded) and what opens or runs it.
Nothing is written; an absent or unreadable place contributes nothing.

:func:`recorded_overview_root` is the out root that ``cutile-workbench`` with no kernel and no out
root opens the overview of: the recorded real cutile-rs sessions of TileGym's own test_perf.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cutile_workbench.artifacts.kernel_index import out_root_kernels, recorded_kernels, tilegym_kernels
from cutile_workbench.profiles import list_profiles, list_recorded_tilegym


@dataclass(frozen=True)
class KernelEntry:
    name: str
    out_root: bool  # a kernel dir under the out root
    recorded: bool  # an embedded recorded H200 session
    profile: bool  # a built-in runnable profile (stand-in candidate)
    tilegym_test: str | None  # TileGym's tests/ops file when it has a cutile-rs wrapper

    @property
    def has_session(self) -> bool:
        return self.out_root or self.recorded

    def where(self) -> str:
        parts = [
            label
            for label, on in (
                ("out root", self.out_root),
                ("recorded session", self.recorded),
                ("profile", self.profile),
                ("TileGym cutile-rs", self.tilegym_test is not None),
            )
            if on
        ]
        return ", ".join(parts)


@dataclass(frozen=True)
class KernelList:
    entries: tuple[KernelEntry, ...]
    out_root: Path | None
    tilegym: Path | None


def list_kernels(*, out_root: Path | None, tilegym: Path | None) -> KernelList:
    in_root = set(out_root_kernels(out_root)) if out_root is not None else set()
    recorded = set(recorded_kernels())
    profiles = {p.kernel for p in list_profiles()}
    tg = {k: str(v.relative_to(tilegym)) for k, v in tilegym_kernels(tilegym).items()} if tilegym else {}
    names = sorted(in_root | recorded | profiles | set(tg))
    return KernelList(
        tuple(KernelEntry(n, n in in_root, n in recorded, n in profiles, tg.get(n)) for n in names),
        out_root,
        tilegym,
    )


def recorded_overview_root() -> Path:
    """The out root of the recorded real cutile-rs sessions (``profiles/tilegym/session``)."""
    return list_recorded_tilegym()[0].session_root
