"""The door to one kernel dir's facts: the :class:`~cutile_workbench.stages.session.kernel.KernelSession`.

Contract: :func:`open_session` resolves ``<kernel>`` like every command (``out_root`` →
``$CUTILE_KERNEL_OUT_ROOT`` → the recorded session; ``tilegym`` → ``$TILEGYM_PATH``) and refuses a kernel
dir that does not exist (``InputError``); :func:`session_of` is the session of a workspace a service was
handed (one per workspace: every service called with it shares the facts read); :func:`ignored_inputs`
is what a lenient open read on without, in one wording for both faces. The faces name the session's
value types through here (they import no core module).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cutile_workbench.artifacts.confine import check_kernel_name as check_kernel_name
from cutile_workbench.artifacts.workspace import Workspace as Workspace
from cutile_workbench.artifacts.workspace import command_line as command_line
from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.errors import InputError
from cutile_workbench.stages.session.configs import ConfigNames as ConfigNames
from cutile_workbench.stages.session.kernel import KernelSession as KernelSession

if TYPE_CHECKING:  # the value types the faces name; imported on first use (they pull in the evidence layer)
    from cutile_workbench.artifacts.launch_store import LaunchStore as LaunchStore
    from cutile_workbench.evidence.ncu import ProbeResult as ProbeResult
    from cutile_workbench.evidence.sol import SolRow as SolRow
    from cutile_workbench.evidence.trust import KernelTrust as KernelTrust
    from cutile_workbench.stages.e.stats import RowSamples as RowSamples

_LAZY = {
    "LaunchStore": "cutile_workbench.artifacts.launch_store",
    "ProbeResult": "cutile_workbench.evidence.ncu",
    "SolRow": "cutile_workbench.evidence.sol",
    "KernelTrust": "cutile_workbench.evidence.trust",
    "RowSamples": "cutile_workbench.stages.e.stats",
}


def __getattr__(name: str) -> Any:
    """The value types above, imported when a face first asks for one (``--help`` and light commands
    stay light)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def ignored_inputs(ws: Workspace | KernelSession) -> tuple[str, ...]:
    """One line per input a lenient open (``strict=False``) read on without: a malformed
    ``reference/analysis.json``, an interrupted report write not recovered. Each names the file and
    line (or key) as the error did; ``history`` and ``diff`` print them on stderr, their TUI views show them."""
    w = ws.ws if isinstance(ws, KernelSession) else ws
    return tuple(f"ignored {e}" for e in w.ignored)


def session_of(ws: Workspace | KernelSession) -> KernelSession:
    """The session of ``ws`` (see the module contract)."""
    return KernelSession.of(ws)


def resolve_config(ws: Workspace | KernelSession, spelling: str, *, key: str = "--config") -> str:
    """The params string of the one config ``spelling`` names (full params, the TUI's label, a node id);
    ``InputError`` listing the close matches, or every config an ambiguous spelling names."""
    return KernelSession.of(ws).resolve_config(spelling, key=key)
