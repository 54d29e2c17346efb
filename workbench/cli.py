"""``cutile-workbench``: the headless CLI (same models as the TUI) and its plug-in registry.

Usage::

    cutile-workbench <kernel>                       open the TUI on a kernel (table + note without Textual)
    cutile-workbench table <kernel> [--json|--csv]  E's ratio table
    cutile-workbench report e <kernel> [--dry-run] [--yes] [--raw-log FILE] [--pytest-rc N]
    cutile-workbench [--out-root DIR] [--tilegym DIR] <command> ...

Contract: :func:`main` returns the exit status — 0 success (report written: DONE or INVESTIGATE),
1 BLOCKED, 2 bad input or usage, 3 validation refused — and never prints a traceback
(``CUTILE_WORKBENCH_DEBUG=1`` shows one for internal errors). A
:class:`~workbench.errors.WorkbenchError` prints ``error: file:line: message`` on stderr and
exits with its ``exit_code``. Commands come from the modules in :data:`COMMAND_MODULES`; each
exposes ``register(commands, report_commands)`` and sets ``func=`` handlers ``(args) -> int``.
A module that is not installed (ImportError of that module itself) is skipped silently. Global
``--out-root``/``--tilegym`` land in ``args.out_root``/``args.tilegym``; sub-commands declare the
same flags with ``default=argparse.SUPPRESS`` (see :func:`add_kernel_args`) so either position works.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.errors import WorkbenchError

COMMAND_MODULES: tuple[str, ...] = (
    "workbench.cli_e",
    "workbench.ir.cli",
    "workbench.report_f",
    "workbench.runner_cli",
    "workbench.tilegym_checks.cli",
)
OPEN_COMMAND = "open"
KEYMAP_HELP = ("TUI key bindings: TOML [keymap] table of binding-id = \"key[,key]\" (else $CUTILE_WORKBENCH_KEYMAP, "
               "else ~/.config/cutile-workbench/keymap.toml if present)")


def add_kernel_args(p: argparse.ArgumentParser) -> None:
    """``kernel`` positional + ``--out-root``/``--tilegym`` that do not reset the global flags."""
    p.add_argument("kernel", help="kernel name (dir under the out root, or a recorded profile session)")
    p.add_argument("--out-root", metavar="DIR", default=argparse.SUPPRESS,
                   help="dir holding <kernel>/ (else $CUTILE_KERNEL_OUT_ROOT, else the recorded session)")
    p.add_argument("--tilegym", metavar="DIR", default=argparse.SUPPRESS,
                   help="TileGym checkout (else $TILEGYM_PATH)")


def path_arg(value: str | None) -> Path | None:
    return Path(value) if value else None


def _cmd_open(args: argparse.Namespace) -> int:
    out_root, tilegym = path_arg(args.out_root), path_arg(args.tilegym)
    try:
        from workbench.tui.app import run_app
    except ImportError as exc:
        from workbench.cli_e import print_table

        print(f"note: the TUI is unavailable ({exc}); showing the table instead", file=sys.stderr)
        return print_table(args.kernel, out_root=out_root, tilegym=tilegym, fmt="text")
    return int(run_app(args.kernel, out_root=out_root, tilegym=tilegym, keymap=path_arg(getattr(args, "keymap", None))))


def _load_modules(names: tuple[str, ...]) -> list[Any]:
    mods = []
    for name in names:
        try:
            mods.append(importlib.import_module(name))
        except ImportError as exc:
            # only "this module is not there" is silent; a broken import inside it is a bug to show
            if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                continue
            raise
    return mods


def build_parser(modules: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cutile-workbench",
        description="TileGym cutile-rs E (benchmark) and F (residual perf) workbench.",
        epilog="A bare kernel name opens the TUI: cutile-workbench <kernel>. "
               "Exit codes: 0 ok, 1 BLOCKED, 2 bad input/usage, 3 validation refused.",
    )
    parser.add_argument("--version", action="version", version=f"cutile-workbench {__version__}")
    parser.add_argument("--out-root", metavar="DIR", default=None,
                        help="dir holding <kernel>/ (else $CUTILE_KERNEL_OUT_ROOT, else the recorded session)")
    parser.add_argument("--tilegym", metavar="DIR", default=None, help="TileGym checkout (else $TILEGYM_PATH)")
    parser.add_argument("--keymap", metavar="FILE", default=None, help=KEYMAP_HELP)
    commands = parser.add_subparsers(dest="command", metavar="<command>")
    p_open = commands.add_parser(OPEN_COMMAND, help="open the TUI on a kernel (also: cutile-workbench <kernel>)")
    add_kernel_args(p_open)
    p_open.add_argument("--keymap", metavar="FILE", default=argparse.SUPPRESS, help=KEYMAP_HELP)
    p_open.set_defaults(func=_cmd_open)
    p_report = commands.add_parser("report", help="plan, validate and write a stage report (e, f)")
    report_commands = p_report.add_subparsers(dest="stage", metavar="<stage>")
    p_report.set_defaults(func=lambda a: _usage(p_report))
    for mod in _load_modules(modules):
        register: Callable[[Any, Any], None] | None = getattr(mod, "register", None)
        if register is not None:
            register(commands, report_commands)
    return parser


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_usage(sys.stderr)
    print(f"{p.prog}: error: a stage is required", file=sys.stderr)
    return 2


def _known_commands(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _rewrite_bare_kernel(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``cutile-workbench [globals] <kernel>`` → ``... open <kernel>``."""
    known = _known_commands(parser)
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--out-root", "--tilegym", "--keymap"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        if a not in known:
            return [*argv[:i], OPEN_COMMAND, *argv[i:]]
        return argv
    return argv


def main(argv: list[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        args_list = _rewrite_bare_kernel(parser, args_list)
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exc:  # argparse: --help (0) or usage error (2)
            return int(exc.code) if isinstance(exc.code, int) else 2
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help(sys.stderr)
            return 2
        for name in ("out_root", "tilegym"):
            if not hasattr(args, name):
                setattr(args, name, None)
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
        print(f"error: internal error: {type(exc).__name__}: {exc} (set CUTILE_WORKBENCH_DEBUG=1 for a traceback)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
