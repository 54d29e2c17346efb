"""Agent E's Step 1 precondition: ``from tilegym.backend.cutile_rs import autotune_launch`` must import.

Contract: :func:`check_precondition` runs the import in a child process with the user's Python,
``cwd=$TILEGYM_PATH`` and ``PYTHONPATH=src`` (plus caller overrides such as
``CUTILE_TUTORIALS_BACKEND``), under a timeout, and never raises for a failing import.
On failure :func:`plan_blocked` renders exactly two files — ``reports/agent_logs/agent_e.md``
(command, traceback, exit status, the seed's ``<VALIDATOR_OUTPUT>`` block) and
``SKILL_METHODOLOGY_BLOCKED.txt`` (the reason) — and :func:`write_blocked` writes them through
the guarded writer. Nothing else is written. A path that is not a TileGym checkout raises
``InputError`` (exit 2).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.checks.childproc import ChildResult, run_child, tilegym_env
from cutile_workbench.errors import InputError
from cutile_workbench.model import PlannedFile, ReportPlan

IMPORT_STATEMENT = "from tilegym.backend.cutile_rs import autotune_launch"
#: the command as the seed prints it in the BLOCKED return block (agent_e.md, Step 1)
SEED_COMMAND = f'python -c "{IMPORT_STATEMENT}"'
_OK_MARK = "CUTILE_WORKBENCH_PRECONDITION_OK"


@dataclass(frozen=True)
class PreconditionResult:
    """Outcome of the import probe."""

    ok: bool
    child: ChildResult
    reason: str  # one line: the exception line of the traceback, or the timeout
    hints: tuple[str, ...] = ()

    @property
    def display_command(self) -> str:
        """The probe as a user would type it (the OK marker print left out)."""
        return f'{self.child.argv[0]} -c "{IMPORT_STATEMENT}"'

    @property
    def traceback(self) -> str:
        return self.child.output.replace(_OK_MARK + "\n", "").rstrip("\n")


def require_tilegym(tilegym: Path | str | None) -> Path:
    """The TileGym checkout path, checked (``src/tilegym`` and ``tests`` must exist)."""
    if tilegym is None or str(tilegym) == "":
        raise InputError(
            "no TileGym checkout given: pass --tilegym DIR or set TILEGYM_PATH", key="TILEGYM_PATH"
        )
    root = Path(tilegym).expanduser()
    if not root.is_dir():
        raise InputError("TileGym checkout not found", path=root)
    if not (root / "src" / "tilegym").is_dir():
        raise InputError("not a TileGym checkout (no src/tilegym)", path=root)
    return root.resolve()


def check_precondition(
    tilegym: Path,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 180.0,
    cancelled: Callable[[], bool] | None = None,
) -> PreconditionResult:
    """Import ``autotune_launch`` in a child process in the TileGym environment.

    ``cancelled`` is polled while the child runs (see :func:`~.childproc.run_child`); a cancelled
    probe is not OK and its reason says so (``result.child.cancelled``)."""
    root = require_tilegym(tilegym)
    code = f"{IMPORT_STATEMENT}; print({_OK_MARK!r})"
    child = run_child(
        python or sys.executable,
        ["-c", code],
        cwd=root,
        env=tilegym_env(root, env),
        timeout_s=timeout_s,
        cancelled=cancelled,
    )
    ok = child.rc == 0 and not child.timed_out and not child.cancelled and _OK_MARK in child.stdout
    if ok:
        return PreconditionResult(True, child, "import OK")
    reason = _reason(child, timeout_s)
    return PreconditionResult(False, child, reason, _hints(child, env))


def _reason(child: ChildResult, timeout_s: float) -> str:
    if child.cancelled:
        return "import of tilegym.backend.cutile_rs cancelled (the child's process group was killed)"
    if child.timed_out:
        return f"import of tilegym.backend.cutile_rs timed out after {timeout_s:g} s"
    lines = [ln for ln in child.stderr.splitlines() if ln.strip()]
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].strip()
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b", line):
            if line.endswith(":") and index + 1 < len(lines):
                # multi-line message (TileGym's "PyTorch is required" ImportError): keep its first line
                return f"{line} {lines[index + 1].strip()}"
            return line
    if lines:
        return lines[-1].strip()
    return f"import exited with status {child.rc} without a traceback"


def _hints(child: ChildResult, env: Mapping[str, str] | None) -> tuple[str, ...]:
    text = child.output
    hints: list[str] = []
    if "Unknown backend" in text and not (env or {}).get("CUTILE_TUTORIALS_BACKEND"):
        hints.append(
            "import tilegym picks CUTILE_TUTORIALS_BACKEND (default cutile) at import time and fails when "
            "cuda.tile is missing; set it to an available backend (e.g. --env CUTILE_TUTORIALS_BACKEND=triton)"
        )
    if "No module named 'torch'" in text or "PyTorch is required" in text:
        hints.append("the interpreter has no torch: pass --python with the TileGym environment's Python")
    if "No module named 'tilegym" in text:
        hints.append("tilegym is not importable from src/: is --tilegym the repository root?")
    if "No module named 'cffi'" in text:
        hints.append("cutile-rs wrappers need cffi in the TileGym environment (pip install cffi)")
    return tuple(hints)


def validator_block(result: PreconditionResult) -> str:
    """The seed's BLOCKED return block for a failed precondition (agent_e.md, Step 1)."""
    exit_code = result.child.rc if result.child.rc not in (0, None) else 1
    return (
        "<VALIDATOR_OUTPUT>\n"
        f"$ {SEED_COMMAND}\n"
        f"{result.traceback}\n"
        f"exit={exit_code}\n"
        "</VALIDATOR_OUTPUT>\n"
        "VERDICT: BLOCKED\n"
    )


def plan_blocked(
    result: PreconditionResult, kernel: str, out_root: Path, *, now: datetime | None = None
) -> ReportPlan:
    """The two BLOCKED files for a failed precondition, as a plan for the guarded writer."""
    if result.ok:
        raise ValueError("plan_blocked() called for a passing precondition")
    paths = KernelPaths.under(Path(out_root), kernel)
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    hints = "".join(f"- {h}\n" for h in result.hints) or "- none\n"
    log = (
        f"# Agent E log: {kernel}\n\n"
        "## Precondition (Step 1)\n\n"
        f"Checked {stamp} by cutile-workbench: `{IMPORT_STATEMENT}` in a child process.\n\n"
        "## Commands\n\n"
        f"```\n$ cd {result.child.cwd}\n$ {result.display_command}\n```\n\n"
        f"exit={result.child.rc}{' (timed out)' if result.child.timed_out else ''}\n\n"
        "## Traceback\n\n"
        f"```\n{result.traceback}\n```\n\n"
        "## Hints\n\n"
        f"{hints}\n"
        "## Result\n\n"
        "No benchmark was run: the cutile-rs autotuner cannot be imported, so no usable data can exist.\n\n"
        "## Validator output\n\n"
        f"```text\n{validator_block(result)}```\n"
    )
    marker = (
        f"BLOCKED: Agent E precondition failed for kernel '{kernel}' at {stamp}\n"
        f"command: {SEED_COMMAND}\n"
        f"reason: {result.reason}\n"
        f"details: reports/agent_logs/agent_e.md\n"
    )
    root = paths.root
    files = [
        PlannedFile(paths.agent_e_log.relative_to(root).as_posix(), log),
        PlannedFile(paths.blocked_marker.relative_to(root).as_posix(), marker),
    ]
    return ReportPlan("E", kernel, root, files, "BLOCKED", validator_block(result), True)


def write_blocked(plan: ReportPlan) -> list[Path]:
    """Write the BLOCKED plan through ``cutile_workbench.artifacts.writer.write_plan`` (lock, backup, path rules)."""
    from cutile_workbench.artifacts.writer import write_plan

    result = write_plan(plan)
    return list(result.written)
