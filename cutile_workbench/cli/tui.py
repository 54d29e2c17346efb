"""The TUI's commands: ``open <kernel>`` (also the bare ``cutile-workbench <kernel>``) and ``keys``.

Contract: ``open`` runs :func:`cutile_workbench.tui.app.run_app` and returns its exit code; where the
TUI cannot be imported (no Textual), says so on stderr and prints E's table instead
(``table <kernel>``). ``keys`` lists every binding id a keymap file may remap, with its default
keys (:func:`cutile_workbench.tui.keymap.describe_bindings`).
"""

from __future__ import annotations

import argparse
import sys

from cutile_workbench.cli.common import KEYMAP_HELP, Command, add_kernel_args, path_arg


class OpenCommand(Command):
    name = "open"
    group = None
    help = "open the TUI on a kernel (also: cutile-workbench <kernel>)"
    description = (
        "Open the Textual workbench on a kernel: Ratios, Timeline, IR diff, Report and Checks screens."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument("--keymap", metavar="FILE", default=argparse.SUPPRESS, help=KEYMAP_HELP)
        parser.add_argument(
            "--gpus",
            metavar="all|0,1,…",
            default=None,
            help="GPU slots for G on Ratios (re-run the shown configs sharded over them); "
            "default: offered when 2+ GPUs are visible, over all of them",
        )

    def run(self, args: argparse.Namespace) -> int:
        out_root, tilegym = path_arg(args.out_root), path_arg(args.tilegym)
        try:
            from cutile_workbench.tui.app import run_app
        except ImportError as exc:
            from cutile_workbench.cli.stage_e import print_table

            print(f"note: the TUI is unavailable ({exc}); showing the table instead", file=sys.stderr)
            return print_table(args.kernel, out_root=out_root, tilegym=tilegym, fmt="text")
        return int(
            run_app(
                args.kernel,
                out_root=out_root,
                tilegym=tilegym,
                keymap=path_arg(getattr(args, "keymap", None)),
                gpus=args.gpus,
            )
        )


def open_overview(args: argparse.Namespace) -> int:
    """``cutile-workbench [--out-root DIR]`` with no kernel: the overview of the out root (``--out-root``, else
    ``$CUTILE_KERNEL_OUT_ROOT``), else of the recorded real cutile-rs sessions shipped in the package."""
    import os
    from pathlib import Path

    from cutile_workbench.services.kernels import recorded_overview_root

    named = args.out_root or os.environ.get("CUTILE_KERNEL_OUT_ROOT")
    root = Path(named) if named else recorded_overview_root()
    try:
        from cutile_workbench.tui.overview_app import run_overview
    except ImportError as exc:
        from cutile_workbench.cli.overview import render_text
        from cutile_workbench.services.overview import overview

        print(f"note: the TUI is unavailable ({exc}); showing the overview instead", file=sys.stderr)
        sys.stdout.write(render_text(overview(root)))
        return 0
    return run_overview(root, tilegym=path_arg(args.tilegym), keymap=path_arg(getattr(args, "keymap", None)))


class KeysCommand(Command):
    name = "keys"
    group = None
    help = "list the TUI's binding ids and default keys (the vocabulary of a --keymap file)"
    description = (
        "Every key binding id of the TUI with its default keys, owner and description: the names a "
        'keymap file ([keymap] table of binding-id = "key[,key]") may remap.'
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        import cutile_workbench.tui.app  # noqa: F401  (declares the app's own bindings: quit, help, 1-6)
        from cutile_workbench.tui.catalog import describe_bindings

        sys.stdout.write(describe_bindings())
        return 0


COMMANDS = (OpenCommand(), KeysCommand())
