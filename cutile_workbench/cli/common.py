"""What every command module of the CLI shares: the command protocol, kernel flags, the write gate.

Contract:
- :class:`Command` is the base class of what :mod:`cutile_workbench.cli` registers (memray's
  ``commands/`` model): a subclass sets ``name``, ``group`` (None by default, or the parent
  command: ``"report"``), ``help``, ``description`` and writes ``prepare_parser(parser)`` and
  ``run(args) -> exit code``; a subclass without a ``name`` or ``help`` string fails when declared. A ``WorkbenchError`` raised by ``run`` becomes ``error: …`` on stderr
  and its exit code (``cutile_workbench.cli.main``).
- :func:`add_kernel_args` adds ``kernel`` and ``--out-root``/``--tilegym`` with
  ``default=argparse.SUPPRESS``, so the global flags given before the command are not reset
  (``args.out_root``/``args.tilegym`` always exist: ``main`` fills in None).
- :func:`confirm` is the one confirmation gate of every writing command (``report e|f``,
  ``check --apply-wiring``; :func:`confirm_write` for report plans): None when writing may
  proceed, else the exit code (2) after saying why on stderr. Non-interactive stdin never
  writes without ``--yes``; a TTY is asked ``[y/N]`` with No as the default.
- :func:`finish_report` is the tail both ``report e`` and ``report f`` share once a plan exists:
  refused (closing blocks, exit 3), ``--dry-run`` (what would be written, closing blocks, a ``DRY
  RUN:`` line), the read-only recorded session (``InputError``), the write gate, then the write
  and the closing blocks with the final ``VERDICT:`` line. A BLOCKED verdict exits 1 on both the
  written and the ``--dry-run`` path (:func:`verdict_exit`), else 0.
"""

from __future__ import annotations

import abc
import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from cutile_workbench.errors import InputError

if TYPE_CHECKING:  # the write gate's types; imported where used so that --help loads no service
    from cutile_workbench.model import ReportPlan
    from cutile_workbench.services.stage_e import Workspace, WriteResult

EXIT_OK, EXIT_BLOCKED, EXIT_USAGE, EXIT_REFUSED = 0, 1, 2, 3
OUT_ROOT_HELP = "dir holding <kernel>/ (else $CUTILE_KERNEL_OUT_ROOT, else the recorded session)"
TILEGYM_HELP = "TileGym checkout (else $TILEGYM_PATH)"
KEYMAP_HELP = (
    'TUI key bindings: TOML [keymap] table of binding-id = "key[,key]" (else $CUTILE_WORKBENCH_KEYMAP, '
    "else ~/.config/cutile-workbench/keymap.toml if present)"
)


class Command(abc.ABC):
    """One sub-command (see the package docstring for how to add one)."""

    name: ClassVar[str]
    group: ClassVar[str | None] = None
    help: ClassVar[str]
    description: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        missing = [
            attr for attr in ("name", "help", "description") if not isinstance(getattr(cls, attr, None), str)
        ]
        if missing:
            raise TypeError(f"command class {cls.__name__} must set {', '.join(missing)} (a string)")

    @abc.abstractmethod
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's own arguments (``add_kernel_args`` for ``kernel`` + the root flags)."""

    @abc.abstractmethod
    def run(self, args: argparse.Namespace) -> int:
        """Do the command; return the exit code (raise a ``WorkbenchError`` for bad input)."""


def add_kernel_args(p: argparse.ArgumentParser, *, kernel_help: str | None = None) -> None:
    """``kernel`` positional + ``--out-root``/``--tilegym`` that do not reset the global flags."""
    p.add_argument(
        "kernel", help=kernel_help or "kernel name (dir under the out root, or a recorded profile session)"
    )
    p.add_argument("--out-root", metavar="DIR", default=argparse.SUPPRESS, help=OUT_ROOT_HELP)
    p.add_argument("--tilegym", metavar="DIR", default=argparse.SUPPRESS, help=TILEGYM_HELP)


def positive_seconds(value: str) -> float:
    """argparse type of every timeout flag: a number of seconds > 0 (else a usage error, exit 2)."""
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {value!r}")
    return seconds


def path_arg(value: str | None) -> Path | None:
    return Path(value) if value else None


def ask_yes_no(prompt: str) -> bool:
    """Ask on stderr, read one line from stdin; anything but y/yes (or an error) means No."""
    print(prompt + " [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def confirm(question: str, *, yes: bool) -> int | None:
    """The write gate: None = go ahead; an int = refuse with that exit code (the reason is on stderr)."""
    if yes:
        return None
    if not sys.stdin.isatty():
        print(
            "error: refusing to write without confirmation: stdin is not a terminal; pass --yes "
            "(or --dry-run to preview)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if not ask_yes_no(question):
        print("not written", file=sys.stderr)
        return EXIT_USAGE
    return None


def confirm_write(plan: ReportPlan, *, yes: bool) -> int | None:
    """:func:`confirm` for a report plan: ``Write N file(s) under DIR?``."""
    return confirm(f"Write {len(plan.files)} file(s) under {plan.kernel_dir}?", yes=yes)


def print_dry_run(plan: ReportPlan, out: TextIO) -> None:
    """``DRY RUN: would write N file(s) under DIR:`` then one ``create|replace path (bytes)`` line each."""
    out.write(f"DRY RUN: would write {len(plan.files)} file(s) under {plan.kernel_dir}:\n")
    for f in plan.files:
        state = "replace" if (plan.kernel_dir / f.relpath).exists() else "create"
        out.write(f"  {state:7s} {f.relpath} ({len(f.content.encode('utf-8', 'surrogateescape'))} bytes)\n")


def print_written(plan: ReportPlan, result: WriteResult, out: TextIO) -> None:
    out.write(f"wrote {len(result.written)} file(s) under {plan.kernel_dir}:\n")
    for p in result.written:
        out.write(f"  {p.relative_to(plan.kernel_dir).as_posix()}\n")
    if result.backup_dir is not None:
        out.write(f"backup of replaced files: {result.backup_dir}\n")


def closing_blocks(plan: ReportPlan) -> str:
    """E's ``<PERF_LOG>`` block (F has none), then the ``<VALIDATOR_OUTPUT>`` block."""
    from cutile_workbench.services.stage_e import output_block

    return plan.perf_log_block + output_block(plan.validator_output)


def finish_report(
    ws: Workspace,
    plan: ReportPlan,
    *,
    dry_run: bool,
    yes: bool,
    noun: str,
    write: Callable[[Workspace, ReportPlan], WriteResult],
    out: TextIO,
) -> int:
    """Refuse, preview or write ``plan`` (see the module contract); returns the exit code."""
    if not plan.ok:
        out.write(closing_blocks(plan))
        print("error: validation refused: a validator exited non-zero; nothing was written", file=sys.stderr)
        return EXIT_REFUSED
    if dry_run:
        print_dry_run(plan, out)
        out.write(closing_blocks(plan))
        out.write(f"DRY RUN: nothing written; the {noun} would say VERDICT: {plan.verdict}\n")
        return verdict_exit(plan)
    from cutile_workbench.services.stage_e import read_only_reason

    read_only = read_only_reason(ws)
    if read_only:
        raise InputError(read_only, path=str(ws.kernel_dir))
    refused = confirm_write(plan, yes=yes)
    if refused is not None:
        return refused
    print_written(plan, write(ws, plan), out)
    out.write(closing_blocks(plan))
    out.write(f"VERDICT: {plan.verdict}\n")
    return verdict_exit(plan)


def verdict_exit(plan: ReportPlan) -> int:
    """1 for a BLOCKED verdict — written or only previewed (``--dry-run``): a script must not read a
    blocked stage as a success — else 0."""
    return EXIT_BLOCKED if plan.verdict == "BLOCKED" else EXIT_OK
