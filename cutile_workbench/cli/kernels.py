"""``kernels [--out-root DIR] [--tilegym DIR] [--json]``: the kernels you can open or run here.

Contract: one row per kernel of :func:`cutile_workbench.services.kernels.list_kernels`: its name,
whether a session is recorded (``session``: the out root's or an embedded one, else ``-``), where
it was found, and the command that opens it (a session) or runs it (a profile or a TileGym kernel
with a cutile-rs wrapper). ``--json`` prints the same as a list of objects. Writes nothing; exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from cutile_workbench.cli.common import EXIT_OK, OUT_ROOT_HELP, TILEGYM_HELP, Command

if TYPE_CHECKING:
    from cutile_workbench.services.kernels import KernelEntry


def next_step(entry: KernelEntry, *, out_root: Path | None, tilegym: Path | None) -> str:
    """The command line that opens (a recorded session) or runs (else) the kernel, quoted for pasting."""
    from cutile_workbench.services.session import command_line

    if entry.out_root and out_root is not None:
        return command_line("--out-root", str(out_root), entry.name)
    if entry.recorded:
        return command_line(entry.name)
    if entry.tilegym_test is not None and tilegym is not None:
        return command_line("run", entry.name, "--tilegym", str(tilegym), "--out-root", "OUT")
    return command_line("run", entry.name, "--out-root", "OUT")


class KernelsCommand(Command):
    name = "kernels"
    group = None
    help = "the kernels you can open or run: recorded sessions, profiles, TileGym's cutile-rs wrappers"
    description = (
        "Every kernel this machine knows: the out root's kernel dirs (--out-root, else "
        "$CUTILE_KERNEL_OUT_ROOT), the embedded recorded H200 sessions, the built-in profiles and, with "
        "--tilegym DIR (else $TILEGYM_PATH), TileGym's kernels that have a cutile-rs wrapper "
        "(src/tilegym/ops/cutile_rs/<kernel>.py) and a tests/ops file; with or without a recorded "
        "session, and the command that opens or runs each."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--out-root", metavar="DIR", default=argparse.SUPPRESS, help=OUT_ROOT_HELP)
        parser.add_argument("--tilegym", metavar="DIR", default=argparse.SUPPRESS, help=TILEGYM_HELP)
        parser.add_argument("--json", action="store_true", help="the list as JSON")

    def run(self, args: argparse.Namespace, out: TextIO | None = None) -> int:
        from cutile_workbench.services.kernels import list_kernels

        out = out or sys.stdout
        root = args.out_root or os.environ.get("CUTILE_KERNEL_OUT_ROOT") or None
        tg = args.tilegym or os.environ.get("TILEGYM_PATH") or None
        listing = list_kernels(out_root=Path(root) if root else None, tilegym=Path(tg) if tg else None)
        rows: list[dict[str, Any]] = [
            {
                "kernel": e.name,
                "session": e.has_session,
                "where": e.where(),
                "tilegym_test": e.tilegym_test,
                "next": next_step(e, out_root=listing.out_root, tilegym=listing.tilegym),
            }
            for e in listing.entries
        ]
        if args.json:
            out.write(json.dumps(rows, indent=2) + "\n")
            return EXIT_OK
        width = max([len(e.name) for e in listing.entries] + [6])
        out.write(f"{'kernel':<{width}}  session  {'found in':<40}  open / run\n")
        for r in rows:
            out.write(
                f"{r['kernel']:<{width}}  {'yes' if r['session'] else '-':<7}  {r['where']:<40}  {r['next']}\n"
            )
        if listing.tilegym is None:
            out.write(
                "(TileGym's kernels with a cutile-rs wrapper are listed with --tilegym DIR or $TILEGYM_PATH)\n"
            )
        return EXIT_OK


COMMANDS = (KernelsCommand(),)
