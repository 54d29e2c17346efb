"""Stage F's command: ``report f <kernel> [--dry-run] [--yes]``.

Contract: goes through :mod:`cutile_workbench.services.stage_f` (collect → diagnose → plan → write) and
prints each investigation's verdict on stderr (and a note when E is DONE: nothing to investigate).
Exit 0 written (FIXABLE/ALIGNED), 1 VERDICT: BLOCKED (written, or previewed with ``--dry-run``),
2 bad input or no confirmation (also: a write into the read-only recorded session, however it was
named), 3 validation refused (closing block printed, no VERDICT line, nothing written).
``--dry-run`` prints what would be written and the closing block, then a ``DRY RUN:`` line.
"""

from __future__ import annotations

import argparse
import sys

from cutile_workbench.cli.common import Command, add_kernel_args, finish_report, path_arg, positive_seconds
from cutile_workbench.errors import InputError
from cutile_workbench.services import stage_f


def _demonstrate_preflight(ws: object, args: argparse.Namespace) -> int | None:
    """The doctor's checks ``--demonstrate`` needs (TileGym tree, pytest, GPU), unless the workspace is
    read-only (that refusal comes from the plan, naming the recorded session): exit 2 or None."""
    from cutile_workbench.cli.doctor import refuse
    from cutile_workbench.services.stage_e import read_only_reason

    if read_only_reason(ws):  # type: ignore[arg-type]
        return None
    return refuse("demonstrate", python=sys.executable, tilegym=args.tilegym)


class ReportFCommand(Command):
    name = "f"
    group = "report"
    help = "Agent F: residual perf investigation reports"
    description = (
        "Diagnose slow configs and write reports/perf_investigation_*.md, agent_f.md and "
        "agent_logs/agent_f.md (guarded write)."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument("--dry-run", action="store_true", help="render and validate, write nothing")
        parser.add_argument("--yes", action="store_true", help="write without asking")
        parser.add_argument(
            "--no-real-scripts",
            action="store_true",
            help="skip the real validate_agent_f.sh even when a TileGym checkout is known",
        )
        parser.add_argument(
            "--demonstrate",
            action="store_true",
            help="authorize F's wrapper-level fix in a throwaway copy of the TileGym tree: add the "
            "reference's config to the candidate's configs, re-run the slow configs there (GPU), "
            "and add the before/after to the reports (needs --tilegym; the tree is not modified)",
        )
        parser.add_argument(
            "--keep-overlay",
            action="store_true",
            help="keep the throwaway copy under <kernel>/workbench/demonstrate/ (default: removed)",
        )
        parser.add_argument(
            "--demonstrate-timeout",
            type=positive_seconds,
            default=900.0,
            metavar="S",
            help="limit of the demonstration's re-run in seconds (default 900)",
        )

    def run(self, args: argparse.Namespace) -> int:
        out = sys.stdout
        ws = stage_f.open_kernel(
            args.kernel, out_root=path_arg(args.out_root), tilegym=path_arg(args.tilegym)
        )
        # the command as it can be run again from anywhere (agent_logs/agent_f.md records it)
        flags = [f for f, on in (("--dry-run", args.dry_run), ("--yes", args.yes)) if on]
        argv = stage_f.command_line("report", "f", args.kernel, *flags, locator=ws.locator)
        demo = None
        if args.demonstrate:
            argv += " --demonstrate"
            if args.dry_run:
                raise InputError(
                    "--demonstrate runs the slow configs on the GPU and files its copy under the kernel's "
                    "workbench/: it cannot be a --dry-run",
                    key="--demonstrate",
                )
            refused = _demonstrate_preflight(ws, args)
            if refused is not None:
                return refused
            demo = stage_f.DemonstrateRequest(
                timeout_s=args.demonstrate_timeout, keep_overlay=args.keep_overlay
            )
        report = stage_f.plan(ws, command=argv, run_real_scripts=not args.no_real_scripts, demonstrate=demo)
        if report.demonstration is not None:
            d = report.demonstration
            print(
                f"demonstration: {d.status}"
                + (f" ({d.reason})" if d.reason else "")
                + "".join(
                    f"\n  {o.params}: ratio {o.before_ratio or float('nan'):.3f}x -> "
                    f"{o.after_ratio or float('nan'):.3f}x"
                    for o in d.outcomes
                ),
                file=sys.stderr,
            )
        plan = report.plan
        for inv in report.investigations:
            print(f"{inv.scope}: {inv.verdict} ({inv.pattern})", file=sys.stderr)
        table = report.inputs.table
        if (
            table is not None
            and table.verdict == "DONE"
            and all(i.pattern == "none" for i in report.investigations)
        ):
            gm = f"{table.geomean:.4f}" if table.geomean is not None else "n/a"
            print(
                f"note: E's verdict is DONE (geomean_ratio={gm}, no config > 1.05x): TileGym runs no F after a "
                "DONE E; the report records that there is nothing to investigate (rule V2)",
                file=sys.stderr,
            )
        return finish_report(
            ws, plan, dry_run=args.dry_run, yes=args.yes, noun="reports", write=stage_f.write, out=out
        )


COMMANDS = (ReportFCommand(),)
