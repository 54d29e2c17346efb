"""``doctor [--tilegym DIR] [--python PY] [--slurm] [--json]``: is this machine ready for a run?

Contract: one line per check of :func:`cutile_workbench.services.doctor.diagnose`, in the order a run
needs them (``OK`` / ``FAIL`` / ``WARN`` / ``SKIP``, what was found, and for FAIL/WARN ``— fix: …``
with the exact command), then a summary line; ``--json`` prints the report's dict instead. Writes
nothing. Exit 0 when no check fails (warnings allowed), 1 when one does, 2 for bad usage.

:func:`refuse` is the preflight's face for ``run``, ``probe`` and ``report f --demonstrate``: it
prints the failing check's line on stderr and returns 2 (None when the command may go on).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TextIO

from cutile_workbench.cli.common import EXIT_BLOCKED, EXIT_OK, EXIT_USAGE, TILEGYM_HELP, Command

DOCTOR_DESCRIPTION = """\
Check, in the order a run needs them, everything a live run on this machine depends on: the GPU
and driver, torch + CUDA, NVML, cupti-python and pytest in the child Python (--python), TileGym
importable, the TileGym tree and commit, the cutile-rs build, tileiras and ptxas, ncu and the
perf-counter permission, SLURM (--slurm). Each failing line ends with the exact fix.
Exit: 0 ready (warnings allowed), 1 some check failed, 2 bad usage."""


class DoctorCommand(Command):
    name = "doctor"
    group = None
    help = "check GPU, child Python, TileGym, cutile-rs, toolchain, ncu: each failing line with its fix"
    description = DOCTOR_DESCRIPTION

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--tilegym", metavar="DIR", default=argparse.SUPPRESS, help=TILEGYM_HELP)
        parser.add_argument(
            "--python",
            metavar="PY",
            default=sys.executable,
            help="the Python that runs the measured pytest child (run --python; default: this one)",
        )
        parser.add_argument("--slurm", action="store_true", help="also check sbatch (run --slurm)")
        parser.add_argument("--json", action="store_true", help="the report as JSON")

    def run(self, args: argparse.Namespace, out: TextIO | None = None) -> int:
        from cutile_workbench.services.doctor import DoctorRequest, diagnose

        out = out or sys.stdout
        tilegym = args.tilegym or os.environ.get("TILEGYM_PATH") or None
        report = diagnose(
            DoctorRequest(python=args.python, tilegym=Path(tilegym) if tilegym else None, slurm=args.slurm)
        )
        if args.json:
            out.write(json.dumps(report.to_dict(), indent=2) + "\n")
        else:
            for check in report.checks:
                out.write(check.line() + "\n")
            failed = report.failed
            out.write(
                f"ready: {'yes' if not failed else 'no'} ({len(failed)} failing, "
                f"{sum(c.status == 'warn' for c in report.checks)} warning(s))\n"
            )
        return EXIT_BLOCKED if report.failed else EXIT_OK


def refuse(command: str, *, python: str, tilegym: str | Path | None) -> int | None:
    """The preflight of ``command`` (see the module contract): 2 after printing the doctor's line, or None."""
    from cutile_workbench.services.doctor import preflight

    tg = tilegym or os.environ.get("TILEGYM_PATH") or None
    failing = preflight(command, python=python, tilegym=Path(tg) if tg else None)
    if failing is None:
        return None
    print(f"error: not ready for {command}: {failing.line()}", file=sys.stderr)
    doctor = shlex.join(
        ["cutile-workbench", "doctor", "--python", python, *(["--tilegym", str(tg)] if tg else [])]
    )
    print(f"(`{doctor}` checks everything a run needs)", file=sys.stderr)
    return EXIT_USAGE


COMMANDS = (DoctorCommand(),)
