"""Stage E's commands: ``table <kernel> [--json|--csv]`` and ``report e <kernel>``.

Contract: both go through :mod:`cutile_workbench.services.stage_e` (open → table → plan → write).
``report e`` prints what it wrote (or, with ``--dry-run``, what it would write: paths + sizes),
then the seed's closing contract on stdout — the ``<PERF_LOG>`` block, the ``<VALIDATOR_OUTPUT>``
block (each ``$ command``, verbatim output, ``exit=N``) and exactly one final ``VERDICT: X`` line
with nothing after it. Exit 0 written, 1 BLOCKED (``VERDICT: BLOCKED``, nothing written), 2 bad
input/usage (also: no ``--yes`` with a non-interactive stdin, or a write into the read-only
recorded session that ships in the package), 3 validation refused (nothing written, no VERDICT
line). A dry run ends with ``DRY RUN: ...`` instead of a VERDICT line: nothing was written.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cutile_workbench.cli.common import Command, add_kernel_args, finish_report, path_arg
from cutile_workbench.errors import Blocked
from cutile_workbench.model import RatioTable
from cutile_workbench.services import stage_e
from cutile_workbench.services.history import RatioComparability, ratio_comparability
from cutile_workbench.services.session import Workspace
from cutile_workbench.services.stage_e import KernelTrust, round4
from cutile_workbench.services.stand_ins import StandIns


def table_json(
    table: RatioTable,
    ws: Workspace | None = None,
    conditions: RatioComparability | None = None,
    trust: KernelTrust | None = None,
) -> dict[str, Any]:
    idents = trust.identities if trust is not None else {}
    return {
        "kernel": table.kernel,
        "verdict": table.verdict,
        "severity": table.severity,
        "geomean": table.geomean,
        "geomean_ratio": f"{round4(table.geomean):.4f}" if table.geomean is not None else None,
        "geomean_ci": list(table.geomean_ci) if table.geomean_ci else None,
        "inconclusive": table.inconclusive,
        "variant_geomeans": table.variant_geomeans,
        "rows": [
            {
                **asdict(r),
                "row_verdict": r.row_verdict,
                "identity": idents[r.params].as_dict() if r.params in idents else None,
                "clocks": {"state": r.clocks.state, "text": r.clocks.text} if r.status == "OK" else None,
            }
            for r in table.rows
        ],
        "candidate_identity": trust.as_dict() if trust is not None else None,
        "notes": table.notes,
        "gaps": [asdict(g) for g in ws.gaps] if ws else [],
        "source": ws.source if ws else None,
        "kernel_dir": str(ws.kernel_dir) if ws else None,
        "conditions": conditions.as_dict() if conditions else None,
        "stand_ins": labels.lines() if (labels := _stand_ins(table, ws)) is not None else [],
    }


CSV_FIELDS = (
    "func_key",
    "params",
    "variant",
    "status",
    "baseline_backend",
    "baseline_ms",
    "candidate_ms",
    "ratio",
    "ci_low",
    "ci_high",
    "candidate_launches",
    "baseline_launches",
    "row_verdict",
    "reason",
    "candidate_harness",
    "baseline_harness",
    "conditions",
    "identity",
    "identity_why",
    "clocks",
    "clocks_detail",
    "noise_floor",
    "noise_text",
)


def table_csv(
    table: RatioTable, conditions: RatioComparability | None = None, trust: KernelTrust | None = None
) -> str:
    """One row per config; ``conditions`` is the comparability state of the row's baseline, ``identity`` the
    candidate identity mark (own / REF / LIB / NONE / ?) and ``identity_why`` its reason."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in table.rows:
        base = conditions.for_baseline(r.baseline_backend) if conditions else None
        ident = trust.identities.get(r.params) if trust is not None else None
        d = {
            **asdict(r),
            "row_verdict": r.row_verdict,
            "conditions": base.state if base else None,
            "identity": ident.mark if ident else None,
            "identity_why": ident.why if ident else None,
            "clocks": r.clocks.state if r.status == "OK" else None,
            "clocks_detail": r.clocks.text if r.status == "OK" else None,
        }
        w.writerow(["" if d[f] is None else d[f] for f in CSV_FIELDS])
    return buf.getvalue()


def table_text(
    table: RatioTable,
    ws: Workspace | None = None,
    conditions: RatioComparability | None = None,
    trust: KernelTrust | None = None,
) -> str:
    def f(x: float | None, spec: str) -> str:
        return "NA" if x is None else format(x, spec)

    from cutile_workbench.clock_exposure import clock_lines, row_mark
    from cutile_workbench.services.stage_e import noise_lines, ratio_with_noise

    sampled = any(r.candidate_clocks is not None or r.baseline_clocks is not None for r in table.matched)
    head = (
        "config",
        "variant",
        "baseline",
        "base ms",
        "cand ms",
        "ratio",
        "95% CI",
        "launches",
        "verdict",
        "id",
    ) + (("clocks",) if sampled else ())
    labels = _stand_ins(table, ws)
    body = []
    for r in table.rows:
        ci = "" if r.ci_low is None or r.ci_high is None else f"{r.ci_low:.3f}-{r.ci_high:.3f}"
        launches = (
            ""
            if r.candidate_launches is None and r.baseline_launches is None
            else f"{r.candidate_launches if r.candidate_launches is not None else '?'}/"
            f"{r.baseline_launches if r.baseline_launches is not None else '?'}"
        )
        verdict = r.row_verdict if r.status != "NO_BASELINE" else "NO_BASELINE"
        base = (
            labels.baseline_label(r.baseline_backend) if labels and r.baseline_backend else r.baseline_backend
        )
        body.append(
            (
                r.params,
                r.variant or "",
                base or "",
                f(r.baseline_ms, ".4f"),
                f(r.candidate_ms, ".4f"),
                "NA" if r.ratio is None else ratio_with_noise(r, f"{r.ratio:.3f}x"),
                ci,
                launches,
                verdict,
                trust.mark(r.params) if trust is not None else "",
            )
            + ((row_mark(r.clocks) if r.status == "OK" else "",) if sampled else ())
        )
    widths = [max(len(str(row[i])) for row in [head, *body]) for i in range(len(head))]
    lines = [f"{table.kernel}" + (f"  ({ws.source}: {ws.kernel_dir})" if ws else "")]
    lines += _candidate_lines(table, ws)
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body]
    if table.geomean is not None:
        ci = f"  95% CI {table.geomean_ci[0]:.4f}-{table.geomean_ci[1]:.4f}" if table.geomean_ci else ""
        inc = "  (inconclusive at 1.05)" if table.inconclusive else ""
        lines.append(
            f"geomean {round4(table.geomean):.4f}{ci}{inc}  severity {table.severity}  "
            f"verdict {table.verdict}"
        )
    for v, g in table.variant_geomeans.items():
        lines.append(f"variant {v}: geomean {round4(g):.4f}")
    lines += identity_lines(table, trust)
    lines += [f"note: {n}" for n in table.notes]
    lines += clock_lines([(r.params, r.clocks) for r in table.matched])
    lines += noise_lines(table.rows)
    if conditions is not None and conditions.short:  # nothing when candidate and baselines are comparable
        lines.append(f"conditions: {conditions.short}")
        lines += [f"  {line}" for line in conditions.lines]
    if ws:
        lines += [f"gap ({g.severity}): {g.what}: {g.path}" for g in ws.gaps if g.severity != "info"]
    return "\n".join(lines) + "\n"


def identity_lines(table: RatioTable, trust: KernelTrust | None) -> list[str]:
    """The line under the table (who ran the rows) and one line per row that is not the candidate's own."""
    if trust is None:
        return []
    out = [trust.summary + "  (id: own / REF / LIB / NONE / ?)"]
    flagged = [
        (r.params, trust.identities[r.params])
        for r in table.rows
        if r.params in trust.identities and trust.identities[r.params].kind != "candidate"
    ]
    whys = {i.why for _p, i in flagged}
    if len(flagged) > 1 and len(whys) == 1 and all(i.kind == "unknown" for _p, i in flagged):
        out.append(f"  ? every flagged row: {whys.pop()}")  # one reason for all: say it once
    else:
        out += [f"  {ident.mark} {params}: {ident.why}" for params, ident in flagged]
    out += [f"  wrapper: {c}" for c in trust.wrapper_calls]
    return out


def _stand_ins(table: RatioTable, ws: Workspace | None) -> StandIns | None:
    from cutile_workbench.services.stand_ins import workspace_stand_ins

    return workspace_stand_ins(ws, table) if ws is not None else None


def _candidate_lines(table: RatioTable, ws: Workspace | None) -> list[str]:
    """Who the candidate is (a stand-in is always named as one) and which harness measured the rows."""
    from cutile_workbench.errors import WorkbenchError
    from cutile_workbench.services.stage_e import harness_summary

    out = []
    frameworks: tuple[str, ...] = ()
    if ws is not None:
        try:
            frameworks = stage_e.candidate_frameworks(ws)  # the session's (cached) table: no re-parse
        except WorkbenchError:
            frameworks = ()  # the table itself names a bad log
    if frameworks:
        stand_in = sorted(set(frameworks) - {"cutile-rs"})  # as report_e.stand_in_frameworks
        out.append(
            f"candidate: STAND-IN {', '.join(stand_in)} (not cutile-rs)"
            if stand_in
            else "candidate: cutile-rs"
        )
    labels = _stand_ins(
        table, ws
    )  # a plain-Triton baseline in the triton_tileir slot is named too (issue 18 §5)
    if labels is not None:
        out += [ln for ln in labels.lines() if not ln.startswith("STAND-IN candidate")]
    out.append(f"measured by: {harness_summary(table.rows)}")
    return out


def print_table(kernel: str, *, out_root: Path | None, tilegym: Path | None, fmt: str, seed: int = 0) -> int:
    ws = stage_e.open_kernel(kernel, out_root=out_root, tilegym=tilegym)
    try:
        table = stage_e.ratio_table(ws, seed)
    except Blocked as exc:
        print(f"BLOCKED: {exc}", file=sys.stderr)
        return 1
    conditions = ratio_comparability(ws, table)
    trust = stage_e.trust(ws, table)
    if fmt == "json":
        print(json.dumps(table_json(table, ws, conditions, trust), indent=2))
    elif fmt == "csv":
        sys.stdout.write(table_csv(table, conditions, trust))
    else:
        sys.stdout.write(table_text(table, ws, conditions, trust))
    return 1 if table.verdict == "BLOCKED" else 0


class TableCommand(Command):
    name = "table"
    group = None
    help = "E's ratio table (candidate / winning baseline per config)"
    description = (
        "E's ratio table: per-config ratios (candidate / winning baseline), 95% CIs, launches per "
        "call, geomean, severity."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        fmt = parser.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="machine-readable JSON")
        fmt.add_argument("--csv", action="store_true", help="CSV, one row per config")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")

    def run(self, args: argparse.Namespace) -> int:
        fmt = "json" if args.json else "csv" if args.csv else "text"
        return print_table(
            args.kernel,
            out_root=path_arg(args.out_root),
            tilegym=path_arg(args.tilegym),
            fmt=fmt,
            seed=args.seed,
        )


class ReportECommand(Command):
    name = "e"
    group = "report"
    help = "Agent E: performance.md + sanitized perf log + logs (guarded write)"
    description = (
        "Plan E's report set (performance.md, the sanitized perf_cutile_rs.txt, agent logs), validate "
        "it in-process and write it (asks first; --yes for non-interactive writes)."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument(
            "--dry-run", action="store_true", help="render and validate, print what would be written"
        )
        parser.add_argument("--yes", action="store_true", help="write without asking")
        parser.add_argument(
            "--raw-log",
            metavar="FILE",
            help="raw pytest log to sanitize (default: reports/agent_logs/perf_cutile_rs.full.txt, "
            "else perf_cutile_rs.txt)",
        )
        parser.add_argument(
            "--pytest-rc",
            type=int,
            default=None,
            help="exit status of the pytest run (default: recorded/inferred)",
        )
        parser.add_argument(
            "--command", dest="run_command", default=None, help="the pytest command, for agent_e.md"
        )
        parser.add_argument(
            "--no-real-scripts", action="store_true", help="skip the TileGym validator scripts"
        )

    def run(self, args: argparse.Namespace) -> int:
        ws = stage_e.open_kernel(
            args.kernel, out_root=path_arg(args.out_root), tilegym=path_arg(args.tilegym)
        )
        request = stage_e.EReportRequest(
            raw_log=path_arg(args.raw_log),
            pytest_rc=args.pytest_rc,
            command=args.run_command,
            run_real_scripts=not args.no_real_scripts,
        )
        try:
            plan = stage_e.plan(ws, request)
        except Blocked as exc:
            print(f"error: {exc}", file=sys.stderr)
            print("nothing was written")
            print("VERDICT: BLOCKED")
            return 1
        return finish_report(
            ws, plan, dry_run=args.dry_run, yes=args.yes, noun="report", write=stage_e.write, out=sys.stdout
        )


COMMANDS = (TableCommand(), ReportECommand())
