"""``calibrate <kernel> [--backend B] [--run] [--json]``: the A/A test of E's rows (issue 18 §4).

Contract: reads the last two runs of the baseline backend from the run history
(:mod:`cutile_workbench.services.calibrate`) and prints, per config, the ratio the newer run would have
scored as a "candidate" against the older, the rows E would have flagged (ratio > 1.05; the goal
is zero) and the largest deviation from 1. ``--run`` first measures the baseline twice, each a
plain ``run <kernel> -b <backend>`` child (same flags: ``--tilegym``, ``--out-root``, ``-k``), which
records both runs in the history. Exit 0 no row flagged, 1 some row flagged, 2 bad input, fewer
than two runs, or a ``--run`` that failed (no GPU, cancelled).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any, TextIO

from cutile_workbench.cli.common import Command, add_kernel_args, path_arg
from cutile_workbench.errors import InputError
from cutile_workbench.services import stage_e
from cutile_workbench.services.calibrate import CalibrationReport, calibration


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def render_calibration(rep: CalibrationReport) -> str:
    cal = rep.result
    lines = [
        f"{rep.kernel}: A/A test of {cal.backend}: run {cal.second[:8]} ({_when(rep.second_when)}) as the "
        f"candidate against run {cal.first[:8]} ({_when(rep.first_when)}); {rep.runs_of_backend} run(s) of "
        f"{cal.backend} in the history, the last two used"
    ]
    if rep.identity_note:
        lines.append(f"note: {rep.identity_note}")
    lines.append("")
    width = max([6, *(len(p) for p, _r in cal.ratios)])
    lines.append(f"{'config':<{width}}  A/A ratio  flagged")
    for params, ratio in cal.ratios:
        lines.append(f"{params:<{width}}  {ratio:>8.4f}x  {'FLAG' if ratio > rep.gate else ''}".rstrip())
    worst = f"; largest deviation from 1: {cal.worst:.2%}" if cal.worst is not None else ""
    lines += [
        "",
        f"rows an identical candidate would have flagged (ratio > {rep.gate:.2f}): {len(cal.flagged)} of "
        f"{len(cal.ratios)} (goal 0){worst}",
    ]
    return "\n".join(lines) + "\n"


def calibration_json(rep: CalibrationReport) -> dict[str, Any]:
    cal = rep.result
    return {
        "kernel": rep.kernel,
        "backend": cal.backend,
        "older_run": cal.first,
        "newer_run": cal.second,
        "older_at": rep.first_when,
        "newer_at": rep.second_when,
        "runs_of_backend": rep.runs_of_backend,
        "gate": rep.gate,
        "ratios": [{"params": p, "ratio": r, "flagged": r > rep.gate} for p, r in cal.ratios],
        "flagged": len(cal.flagged),
        "largest_deviation": cal.worst,
        "identity_note": rep.identity_note,
    }


def _measure_twice(args: argparse.Namespace, backend: str, out: TextIO) -> int:
    cmd = [sys.executable, "-m", "cutile_workbench", "run", args.kernel, "-b", backend]
    for flag, value in (("--tilegym", args.tilegym), ("--out-root", args.out_root), ("-k", args.k_expr)):
        if value:
            cmd += [flag, str(value)]
    for i in (1, 2):
        out.write(f"calibrate: baseline run {i} of 2: {' '.join(cmd[2:])}\n")
        out.flush()
        rc = subprocess.run(cmd, check=False).returncode
        if rc != 0:
            out.write(f"calibrate: run {i} exited {rc}: no A/A test (see its output above)\n")
            return 2
    return 0


class CalibrateCommand(Command):
    name = "calibrate"
    group = None
    help = "A/A test: how many rows would a candidate identical to the baseline flag?"
    description = (
        "Run the baseline twice (--run) or read its last two runs from the run history, and report, per "
        "config, the ratio the newer run scores as a 'candidate' against the older: the rows E would "
        "flag (> 1.05; the goal is zero) and the largest deviation. Exit 0 none flagged, 1 some flagged, "
        "2 bad input or fewer than two runs."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument(
            "--backend",
            "-b",
            metavar="B",
            default=None,
            help="the baseline's record backend (default: analysis.json's reference backend)",
        )
        parser.add_argument(
            "--run", action="store_true", help="measure the baseline twice first (needs a GPU)"
        )
        parser.add_argument(
            "-k", dest="k_expr", metavar="EXPR", default=None, help="with --run: pytest -k filter"
        )
        parser.add_argument("--json", action="store_true", help="machine-readable JSON")

    def run(self, args: argparse.Namespace, stream: TextIO | None = None) -> int:
        out = stream or sys.stdout
        if args.run:
            if not args.backend:
                raise InputError(
                    "calibrate --run needs --backend (the baseline to measure twice)", key="--backend"
                )
            rc = _measure_twice(args, args.backend, out)
            if rc:
                return rc
        ws = stage_e.open_kernel(
            args.kernel, out_root=path_arg(args.out_root), tilegym=path_arg(args.tilegym), strict=False
        )
        rep = calibration(ws, args.backend)
        if args.json:
            out.write(json.dumps(calibration_json(rep), indent=2) + "\n")
        else:
            out.write(render_calibration(rep))
        return 1 if rep.result.flagged else 0


COMMANDS = (CalibrateCommand(),)
