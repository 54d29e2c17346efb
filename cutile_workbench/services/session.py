"""The door to one kernel dir's facts: the :class:`~cutile_workbench.stages.session.kernel.KernelSession`.

Contract: :func:`open_session` resolves ``<kernel>`` like every command (``out_root`` →
``$CUTILE_KERNEL_OUT_ROOT`` → the recorded session; ``tilegym`` → ``$TILEGYM_PATH``) and refuses a kernel
dir that does not exist (``InputError``); :func:`session_of` is the session of a workspace a service was
handed (one per workspace: every service called with it shares the facts read). The faces name the
session's value types through here (they import no core module).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from cutile_workbench.artifacts.workspace import Workspace as Workspace
from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.errors import InputError
from cutile_workbench.stages.session.configs import ConfigNames as ConfigNames
from cutile_workbench.stages.session.kernel import KernelSession as KernelSession


def open_session(
    kernel: str,
    *,
    out_root: Path | None,
    tilegym: Path | None,
    env: Mapping[str, str] = os.environ,
    strict: bool = True,
    require_dir: bool = True,
) -> KernelSession:
    """The kernel's session; ``InputError`` when its dir does not exist (a typo in kernel or out root),
    unless ``require_dir`` is False (the TUI shows what is missing instead)."""
    ws = open_workspace(kernel, out_root=out_root, tilegym=tilegym, env=env, strict=strict)
    if require_dir and not ws.kernel_dir.is_dir():
        raise InputError(
            f"kernel dir does not exist (source: {ws.source}); check the kernel name and --out-root",
            path=str(ws.kernel_dir),
        )
    return KernelSession.of(ws)


def session_of(ws: Workspace | KernelSession) -> KernelSession:
    """The session of ``ws`` (see the module contract)."""
    return KernelSession.of(ws)


def resolve_config(ws: Workspace | KernelSession, spelling: str, *, key: str = "--config") -> str:
    """The params string of the one config ``spelling`` names (full params, the TUI's label, a node id);
    ``InputError`` listing the close matches, or every config an ambiguous spelling names."""
    return KernelSession.of(ws).resolve_config(spelling, key=key)
