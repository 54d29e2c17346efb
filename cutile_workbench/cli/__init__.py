"""``cutile-workbench``: the headless CLI, the top of the house (nothing imports it but ``__main__``).

Usage::

    cutile-workbench <kernel>                       open the TUI on a kernel (table + note without Textual)
    cutile-workbench table <kernel> [--json|--csv]  E's ratio table
    cutile-workbench report e|f <kernel> [--dry-run] [--yes]
    cutile-workbench [--out-root DIR] [--tilegym DIR] <command> ...

Layout: one module per command group, each a thin face over :mod:`cutile_workbench.services`
(the TUI calls the same services):

- :mod:`.tui` ``open`` · :mod:`.stage_e` ``table``, ``report e`` · :mod:`.stage_f` ``report f``
- :mod:`.ir_diff` ``diff`` · :mod:`.run` ``run`` · :mod:`.timeline` ``timeline`` · :mod:`.probe` ``probe``
- :mod:`.checks` ``check``, ``kselect``, ``audit-wrapper`` · :mod:`.history` ``history``
- :mod:`.common` shared flags, write gate

Adding a command (``history <kernel>`` was added this way):

1. Put the work in a service (``cutile_workbench/services/history.py``: typed inputs/outputs, no
   argparse, no printing) so the TUI can call it too.
2. Write ``cutile_workbench/cli/history.py`` with a subclass of :class:`.common.Command` that has
   ``name = "history"``, ``group = None``
   (or ``"report"`` for ``report <name>``), ``help``, ``description`` (plain text: it is printed
   as is), ``prepare_parser(parser)`` (use :func:`.common.add_kernel_args` for ``kernel`` +
   ``--out-root``/``--tilegym``) and ``run(args) -> int`` (the exit code), and a module-level
   ``COMMANDS = (HistoryCommand(),)``.
3. Add the module to :data:`COMMAND_MODULES` (the order is the ``--help`` order) and each of its
   commands to :data:`COMMAND_INDEX` (name, group, help: what ``--help`` shows without importing
   the module; ``tests/unit/test_cli_lazy.py`` fails when the two disagree).
4. Raise :class:`~cutile_workbench.errors.WorkbenchError` subclasses for bad input: :func:`main` prints
   ``error: file:line: message`` and exits with their code. Flags of an existing command are
   extended in that module only (``run``: :func:`.run.add_run_arguments` + :func:`.run.run_request`).

Contract: :func:`main` returns the exit status — 0 success (report written: DONE or INVESTIGATE),
1 BLOCKED, 2 bad input or usage, 3 validation refused — and never prints a traceback
(``CUTILE_WORKBENCH_DEBUG=1`` shows one for internal errors). Global ``--out-root``/``--tilegym``
land in ``args.out_root``/``args.tilegym``; commands declare the same flags with
``default=argparse.SUPPRESS`` so either position works. Commands import only what they run:
:func:`main` imports the module of the command named on the command line and no other (``--help``
imports none; the others are listed from :data:`COMMAND_INDEX`).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
import traceback
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from cutile_workbench import __version__
from cutile_workbench.cli.common import KEYMAP_HELP, OUT_ROOT_HELP, TILEGYM_HELP, Command
from cutile_workbench.errors import WorkbenchError

#: command modules in ``--help`` order; each defines ``COMMANDS`` (see "Adding a command")
COMMAND_MODULES: tuple[str, ...] = (
    "cutile_workbench.cli.tui",
    "cutile_workbench.cli.stage_e",
    "cutile_workbench.cli.stage_f",
    "cutile_workbench.cli.ir_diff",
    "cutile_workbench.cli.run",
    "cutile_workbench.cli.timeline",
    "cutile_workbench.cli.probe",
    "cutile_workbench.cli.checks",
    "cutile_workbench.cli.history",
    "cutile_workbench.cli.overview",
    "cutile_workbench.cli.calibrate",
    "cutile_workbench.cli.doctor",
    "cutile_workbench.cli.kernels",
)


@dataclass(frozen=True)
class IndexedCommand:
    """What ``--help`` and the command-name checks need of a command, without importing its module."""

    module: str
    name: str
    group: str | None
    help: str


#: every command of :data:`COMMAND_MODULES`, in order (kept equal to the modules' ``COMMANDS`` by a test)
COMMAND_INDEX: tuple[IndexedCommand, ...] = (
    IndexedCommand(
        "cutile_workbench.cli.tui", "open", None, "open the TUI on a kernel (also: cutile-workbench <kernel>)"
    ),
    IndexedCommand(
        "cutile_workbench.cli.tui",
        "keys",
        None,
        "list the TUI's binding ids and default keys (the vocabulary of a --keymap file)",
    ),
    IndexedCommand(
        "cutile_workbench.cli.stage_e",
        "table",
        None,
        "E's ratio table (candidate / winning baseline per config)",
    ),
    IndexedCommand(
        "cutile_workbench.cli.stage_e",
        "e",
        "report",
        "Agent E: performance.md + sanitized perf log + logs (guarded write)",
    ),
    IndexedCommand(
        "cutile_workbench.cli.stage_f", "f", "report", "Agent F: residual perf investigation reports"
    ),
    IndexedCommand(
        "cutile_workbench.cli.ir_diff", "diff", None, "structural Tile IR diff + diff_ir.sh-parity audit"
    ),
    IndexedCommand(
        "cutile_workbench.cli.run",
        "run",
        None,
        "run a kernel's perf suite live (TileGym or a built-in profile) and write the results",
    ),
    IndexedCommand(
        "cutile_workbench.cli.timeline",
        "timeline",
        None,
        "launches per call and per-launch times of one config",
    ),
    IndexedCommand(
        "cutile_workbench.cli.probe",
        "probe",
        None,
        "Nsight Compute on one profiled call of each side of a config",
    ),
    IndexedCommand(
        "cutile_workbench.cli.checks",
        "check",
        None,
        "E preconditions: autotune_launch import + test_perf cutile-rs wiring",
    ),
    IndexedCommand(
        "cutile_workbench.cli.checks",
        "kselect",
        None,
        "-k expressions for candidate and baseline from analysis.json",
    ),
    IndexedCommand(
        "cutile_workbench.cli.checks",
        "audit-wrapper",
        None,
        "static audit of src/tilegym/ops/cutile_rs/<kernel>.py",
    ),
    IndexedCommand(
        "cutile_workbench.cli.history",
        "history",
        None,
        "run history per config: medians, trend, regression flags, provenance",
    ),
    IndexedCommand(
        "cutile_workbench.cli.overview",
        "overview",
        None,
        "every kernel dir of an out root: E verdict, geomean, worst config, F verdicts, flags",
    ),
    IndexedCommand(
        "cutile_workbench.cli.calibrate",
        "calibrate",
        None,
        "A/A test: how many rows would a candidate identical to the baseline flag?",
    ),
    IndexedCommand(
        "cutile_workbench.cli.doctor",
        "doctor",
        None,
        "check GPU, child Python, TileGym, cutile-rs, toolchain, ncu: each failing line with its fix",
    ),
    IndexedCommand(
        "cutile_workbench.cli.kernels",
        "kernels",
        None,
        "the kernels you can open or run: recorded sessions, profiles, TileGym's cutile-rs wrappers",
    ),
)
OPEN_COMMAND = "open"
#: parent commands that only group others (``report e``, ``report f``): help line of each
GROUPS = {"report": "plan, validate and write a stage report (e, f)"}
#: flags whose value is the next word (the positional scan skips it); ``--gpus`` is ``open``'s and ``run``'s
GLOBAL_FLAGS_WITH_VALUE = ("--out-root", "--tilegym", "--keymap", "--gpus")


def load_commands(modules: Sequence[str] = COMMAND_MODULES) -> list[Command]:
    commands: list[Command] = []
    for name in modules:
        for command in importlib.import_module(name).COMMANDS:
            if not isinstance(command, Command):
                raise TypeError(f"{name}.COMMANDS holds {command!r}, not a cli.common.Command")
            commands.append(command)
    return commands


def _usage_of(parser: argparse.ArgumentParser, what: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {what} is required", file=sys.stderr)
    return 2


def build_parser(
    modules: Sequence[str] = COMMAND_MODULES, *, load: Collection[str] | None = None
) -> argparse.ArgumentParser:
    """The full parser of ``modules``; with ``load``, only those modules are imported and every other
    command of :data:`COMMAND_INDEX` gets a flag-less placeholder (its name and help line)."""
    parser = argparse.ArgumentParser(
        prog="cutile-workbench",
        description="TileGym cutile-rs E (benchmark) and F (residual perf) workbench.",
        epilog="A bare kernel name opens the TUI: cutile-workbench <kernel>. "
        "Exit codes: 0 ok, 1 BLOCKED, 2 bad input/usage, 3 validation refused.",
    )
    parser.add_argument("--version", action="version", version=f"cutile-workbench {__version__}")
    parser.add_argument("--out-root", metavar="DIR", default=None, help=OUT_ROOT_HELP)
    parser.add_argument("--tilegym", metavar="DIR", default=None, help=TILEGYM_HELP)
    parser.add_argument("--keymap", metavar="FILE", default=None, help=KEYMAP_HELP)
    top = parser.add_subparsers(dest="command", metavar="<command>")
    groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}
    entries: list[Command | IndexedCommand] = []
    for module in modules:
        if load is None or module in load:
            entries.extend(importlib.import_module(module).COMMANDS)
        else:
            entries.extend(e for e in COMMAND_INDEX if e.module == module)
    for command in entries:
        where = top
        if command.group is not None:
            if command.group not in groups:
                p_group = top.add_parser(command.group, help=GROUPS.get(command.group, ""))
                groups[command.group] = p_group.add_subparsers(dest="stage", metavar="<stage>")
                p_group.set_defaults(func=lambda _a, _p=p_group: _usage_of(_p, "a stage"))
            where = groups[command.group]
        if isinstance(command, IndexedCommand):
            where.add_parser(command.name, help=command.help)
            continue
        sub = where.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.prepare_parser(sub)
        sub.set_defaults(func=command.run)
    return parser


def _modules_for(argv: list[str]) -> set[str]:
    """The command modules the (rewritten) command line names: its first word's, or a group's."""
    words = [w for _i, w in _positionals(argv)]
    if not words:
        return set()
    first = words[0]
    named = [e for e in COMMAND_INDEX if e.name == first and e.group is None]
    if not named:
        members = [e for e in COMMAND_INDEX if e.group == first]
        named = [e for e in members if len(words) > 1 and e.name == words[1]] or members
    return {e.module for e in named}


def _known_commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _positionals(argv: list[str]) -> list[tuple[int, str]]:
    """``(index, word)`` of the words before ``--`` that are neither flags nor global-flag values."""
    found: list[tuple[int, str]] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a in GLOBAL_FLAGS_WITH_VALUE:
            i += 2
            continue
        if not a.startswith("-"):
            found.append((i, a))
        i += 1
    return found


def _rewrite_bare_kernel(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``cutile-workbench [globals] <kernel>`` → ``... open <kernel>``."""
    words = _positionals(argv)
    if not words or words[0][1] in _known_commands(parser):
        return argv
    i = words[0][0]
    return [*argv[:i], OPEN_COMMAND, *argv[i:]]


def _unknown_command(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The message for ``cutile-workbench <not-a-command> <more positionals>`` (None when it reads as a
    bare kernel name): a typo in a command must not be taken for a kernel whose extra word is unknown."""
    known = _known_commands(parser)
    words = [w for _i, w in _positionals(argv)]
    if len(words) < 2 or words[0] in known:
        return None
    close = difflib.get_close_matches(words[0], sorted(known), n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return (
        f"unknown command {words[0]!r}{hint} (commands: {', '.join(sorted(known))}; a bare kernel name "
        f"opens the TUI: cutile-workbench <kernel>)"
    )


def _prepare_process() -> None:
    from cutile_workbench.services.process import prepare_process

    prepare_process()  # numpy's BLAS pool is sized when it loads: one thread (services.process says why)


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(load=())  # names only: no command module imported yet
        unknown = _unknown_command(parser, args_list)
        if unknown is not None:
            parser.print_usage(sys.stderr)
            print(f"{parser.prog}: error: {unknown}", file=sys.stderr)
            return 2
        args_list = _rewrite_bare_kernel(parser, args_list)
        wanted = _modules_for(args_list)
        if wanted:
            _prepare_process()  # before a command module imports numpy (--help alone loads neither)
            parser = build_parser(load=wanted)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exc:  # argparse: --help (0) or usage error (2)
            return int(exc.code) if isinstance(exc.code, int) else 2
        func = getattr(args, "func", None)
        if func is None:
            # no kernel named: the TUI opens on the overview of the out root, else of the recorded sessions
            from cutile_workbench.cli.tui import open_overview

            _prepare_process()
            return open_overview(args)
        for name in ("out_root", "tilegym"):
            if not hasattr(args, name):
                setattr(args, name, None)
        if (
            getattr(args, "kernel", None) is not None
        ):  # every kernel command: one check, before any path is built
            from cutile_workbench.services.session import check_kernel_name

            check_kernel_name(args.kernel)
        return int(func(args))
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if os.environ.get("CUTILE_WORKBENCH_DEBUG"):
            traceback.print_exc()
        print(
            f"error: internal error: {type(exc).__name__}: {exc} (set CUTILE_WORKBENCH_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
