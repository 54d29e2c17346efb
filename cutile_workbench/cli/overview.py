"""``overview [--json|--csv] [--sort KEY]``: every kernel dir of an out root, one row each.

Contract: reads ``--out-root`` (else ``$CUTILE_KERNEL_OUT_ROOT``; neither is a usage error, exit 2)
through :mod:`cutile_workbench.services.overview` and writes nothing. The text form is a table — kernel,
E verdict, geomean, severity, where E's numbers came from (``md`` = the current performance.md,
``logs`` = computed from the perf logs, ``logs*`` = computed because performance.md is stale),
worst config and its ratio, matched/configs, F verdicts, candidate (``STAND-IN`` marked),
comparability, last run, regression since the previous run — then a line of totals (kernels per
severity, broken dirs, the geomean of the geomeans) and a strip of every kernel's geomean against
E's 1.05 band. A broken kernel dir is a row saying what is wrong. ``--json`` is the versioned
document of :meth:`cutile_workbench.stages.e.overview.Overview.as_dict` (README "Overview": every field);
``--csv`` one row per kernel. Exit 0 whatever the kernels' verdicts (it is a listing).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from cutile_workbench.cli.common import Command
from cutile_workbench.errors import InputError
from cutile_workbench.model import OVERVIEW_COLUMNS
from cutile_workbench.services.overview import (
    E_SOURCE_SHORT,
    SEVERITY_ORDER,
    SORT_KEYS,
    Overview,
    OverviewRow,
    geomean_strip,
    overview,
)

CSV_FIELDS = (
    "kernel",
    "problem",
    "e_source",
    "e_verdict",
    "geomean",
    "severity",
    "worst_config",
    "worst_ratio",
    "configs",
    "matched",
    "missing",
    "f_verdicts",
    "candidate",
    "stand_in",
    "identity",
    "comparability",
    "comparability_text",
    "last_run",
    "regression",
    "path",
)


def out_root_of(args: argparse.Namespace, env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    root = getattr(args, "out_root", None) or env.get("CUTILE_KERNEL_OUT_ROOT")
    if not root:
        raise InputError(
            "overview needs an out root: pass --out-root DIR or set CUTILE_KERNEL_OUT_ROOT", key="--out-root"
        )
    return Path(root)


def _fmt(x: float | None, spec: str = ".4f") -> str:
    return "—" if x is None else format(x, spec)


def _cells(r: OverviewRow) -> tuple[str, ...]:
    """One row's text cells, in :data:`~cutile_workbench.model.OVERVIEW_COLUMNS` order."""
    if r.problem:  # the problem itself is printed under the table (it would widen every column)
        return (r.kernel, "BROKEN", *("—",) * (len(HEAD) - 2))
    f = ",".join(f"{s}:{v}" for s, v in r.f_verdicts.items()) or "—"
    cand = ("STAND-IN " + (r.candidate or "?")) if r.stand_in else (r.candidate or "—")
    matched = f"{r.matched}/{r.configs}" if r.configs is not None else "—"
    worst = f"{r.worst_config} {r.worst_ratio:.2f}x" if r.worst_config and r.worst_ratio is not None else "—"
    cell = {
        "kernel": r.kernel,
        "E": r.e_verdict or "—",
        "geomean": _fmt(r.geomean),
        "severity": r.severity or "—",
        "worst config": worst,
        "matched": matched,
        "F": f,
        "candidate": cand,
        "identity": r.identity_mark,
        "comparable": r.comparability or "—",
        "from": E_SOURCE_SHORT.get(r.e_source or "", "—"),
        "regression": r.regression or "—",
        "last run": (r.last_run or "—").replace("T", " "),
    }
    return tuple(cell[c] for c in HEAD)


HEAD = OVERVIEW_COLUMNS


def render_text(ov: Overview) -> str:
    rows = [HEAD, *(_cells(r) for r in ov.rows)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEAD))]
    lines = [f"overview of {ov.root}: {len(ov.rows)} kernel dir(s)"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines += [f"BROKEN {r.kernel}: {r.problem}" for r in ov.rows if r.problem]
    per = ov.per_severity
    g = ov.geomean_of_geomeans
    lines.append("")
    lines.append(
        "totals: "
        + ", ".join(f"{s} {per[s]}" for s in (*SEVERITY_ORDER, "none") if per[s])
        + f"; broken {ov.broken}; geomean of geomeans "
        + (f"{g:.4f}" if g else "—")
    )
    if any(r.stand_in for r in ov.rows):
        lines.append(
            "STAND-IN: a candidate that is not real cutile-rs (its numbers say nothing about a port)"
        )
    lines += [f"identity CHECK {r.kernel}: {r.identity}" for r in ov.rows if r.identity_mark == "CHECK"]
    lines.append(
        "from: md = the kernel's current performance.md; logs = computed from the perf logs "
        "(logs* = performance.md is older than the logs)"
    )
    strip = geomean_strip(ov)
    if strip:
        lines += ["", *strip]
    return "\n".join(lines) + "\n"


def render_csv(ov: Overview) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in ov.rows:
        d = {k: getattr(r, k) for k in CSV_FIELDS}
        d["f_verdicts"] = ";".join(f"{s}={v}" for s, v in r.f_verdicts.items())
        w.writerow(d)
    return buf.getvalue()


class OverviewCommand(Command):
    name = "overview"
    group = None
    help = "every kernel dir of an out root: E verdict, geomean, worst config, F verdicts, flags"
    description = (
        "One row per kernel dir of the out root (--out-root, else $CUTILE_KERNEL_OUT_ROOT): E's verdict, "
        "geomean and severity (from the current performance.md, else computed from the logs, and "
        "saying which), the worst config, configs matched/missing, F verdicts, the candidate "
        "(STAND-IN marked), comparability, last run and a regression since the previous run. "
        "Writes nothing."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--out-root",
            metavar="DIR",
            default=argparse.SUPPRESS,
            help="the campaign's out root (else $CUTILE_KERNEL_OUT_ROOT)",
        )
        parser.add_argument(
            "--sort",
            choices=SORT_KEYS,
            default="geomean",
            help="row order: geomean (worst first, the default), kernel, severity, last_run",
        )
        parser.add_argument(
            "--no-cache",
            action="store_true",
            help="recompute every row (the default reuses rows whose input files are unchanged, "
            "cached under ~/.cache/cutile-workbench/overview or $CUTILE_WORKBENCH_CACHE)",
        )
        fmt = parser.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="versioned JSON document (schema_version)")
        fmt.add_argument("--csv", action="store_true", help="CSV, one row per kernel")

    def run(self, args: argparse.Namespace, stream: TextIO | None = None) -> int:
        out = stream or sys.stdout
        ov = overview(out_root_of(args), sort=args.sort, cache=not args.no_cache)
        if args.json:
            out.write(json.dumps(ov.as_dict(), indent=2) + "\n")
        elif args.csv:
            out.write(render_csv(ov))
        else:
            out.write(render_text(ov))
        return 0


COMMANDS = (OverviewCommand(),)
