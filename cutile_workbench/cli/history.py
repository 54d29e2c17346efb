"""``history <kernel> [--config PARAMS] [--backend B] [--json|--csv]``: every run of each config, with flags.

Contract: reads the kernel's history through :mod:`cutile_workbench.services.history` (an out root's
``workbench/history.sqlite`` and the artifact tree, or the recorded session shipped in the package,
imported in memory: reading never writes; only ``run`` records). The text form prints, per config and
backend, a trend sparkline of the medians and one line per run — run time (UTC), run key, GPU,
harness, median, raw samples kept, and the change from the previous run (``+`` regression, ``-``
improvement, ``=`` same, ``~`` inconclusive) with its median ratio, bootstrap CI and Mann-Whitney
p, or why it was not tested — then any difference in the two runs' conditions (``⚠``) and notes
(launches per call or top kernel changed). ``--json`` / ``--csv`` are the machine forms. An
unknown config or backend exits 2 naming close matches or the backends present. An input read on
without (a malformed ``reference/analysis.json``) is a ``warning: ignored FILE:LINE: …`` line on stderr
in every form (and the ``ignored`` list of ``--json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from cutile_workbench.cli.common import Command, add_kernel_args, path_arg
from cutile_workbench.cli.timeline import display_path
from cutile_workbench.services import history as history_service
from cutile_workbench.services import stage_e
from cutile_workbench.services.history import HistorySeries, KernelHistory
from cutile_workbench.services.session import command_line
from cutile_workbench.services.stand_ins import workspace_stand_ins

TREND_POINTS = 24  # the trend shows the last runs only (a sparkline wider than that is unreadable)
HEAD = ("backend", "trend", "run time (UTC)", "run", "GPU", "harness", "median ms", "n", "vs previous run")
RIGHT = {6, 7}  # the numbers line up on the right


def _trend(series: HistorySeries) -> str:
    if len(series.points) <= TREND_POINTS:
        return series.trend
    return "…" + series.tail(TREND_POINTS).trend


def _rows(series: HistorySeries) -> list[tuple[str, ...]]:
    """One row per run; backend and trend on the series' first row only; ⚠ where the conditions differ."""
    out: list[tuple[str, ...]] = []
    for i, p in enumerate(series.points):
        change = "(first run)"
        if p.change is not None:
            change = p.change.brief() + (" ⚠" if p.change.condition_flags else "")
            change += "".join(f"; {note}" for note in p.change.notes)
        out.append(
            (
                series.label if i == 0 else "",
                _trend(series) if i == 0 else "",
                p.run.when_text.removesuffix(" UTC"),
                p.run.short_key,
                p.run.gpu,
                p.run.harness,
                f"{p.median_ms:.6f}",
                str(p.n_samples) if p.n_samples else "-",
                change,
            )
        )
    return out


def _table(
    head: tuple[str, ...], rows: Sequence[tuple[str, ...]], right: set[int], indent: str = "  "
) -> list[str]:
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    return [
        (
            indent
            + "  ".join(
                c.rjust(w) if i in right else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        ).rstrip()
        for row in (head, *rows)
    ]


def _runs_section(history: KernelHistory) -> list[str]:
    """Every run with its conditions (the provenance a series row stands on)."""
    head = (
        "run",
        "run time (UTC)",
        "role",
        "GPU",
        "driver",
        "harness",
        "clocks SM/mem (start → end)",
        "throttling",
        "source",
    )
    rows = [
        (
            r.short_key,
            r.when_text.removesuffix(" UTC"),
            ",".join(r.roles) or "-",
            r.gpu,
            r.driver,
            r.harness,
            r.clocks,
            r.throttling,
            "runner" if r.source == "live" else "imported",
        )
        for r in history.runs
    ]
    return ["", "runs:", *_table(head, rows, set())]


def _conditions_section(history: KernelHistory) -> list[str]:
    """Each pair of consecutive runs whose conditions differ, once (the ⚠ of the rows)."""
    seen: dict[tuple[str, str], tuple[str, ...]] = {}
    for s in history.series:
        for p in s.points:
            if p.change is not None and p.change.condition_flags:
                seen.setdefault((p.change.previous[:8], p.run.short_key), p.change.condition_flags)
    lines = []
    for (older, newer), flags in seen.items():
        lines.append(f"⚠ run {newer} vs the run before it ({older}): " + "; ".join(flags))
    return ["", *lines] if lines else []


def render_history_text(history: KernelHistory, where: str) -> str:
    """The readable form (see module contract); ``where`` names the store or the kernel dir."""
    n_runs, configs = len(history.runs), history.configs()
    lines = [
        f"{history.kernel} — run history: {n_runs} run{'s' if n_runs != 1 else ''}, "
        f"{len(configs)} config{'s' if len(configs) != 1 else ''} · {where}"
    ]
    lines += [f"note: {n}" for n in history.notes if "imported into memory" not in n]
    lines += [f"not imported: {path}: {why}" for path, why in history.skipped]
    if not history.series:
        # a recorded session is read-only: its runs go to an out root of the user's (OUT)
        root = str(history.kernel_dir.parent) if history.source == "out_root" else "OUT"
        run = command_line("run", history.kernel, "--out-root", root)
        lines.append(
            f"no runs in the history yet: run the kernel on a GPU node (`{run}`) or add its perf logs"
        )
        return "\n".join(lines) + "\n"
    lines += _runs_section(history)
    by_config: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for s in history.ordered_series():
        by_config.setdefault((s.func_key, s.params), []).extend(_rows(s))
    table = _table(HEAD, [row for rows in by_config.values() for row in rows], RIGHT)
    header, body = table[0], iter(table[1:])
    several_tests = len({fk for fk, _p in by_config}) > 1
    for (func_key, params), rows in by_config.items():
        lines += ["", params + (f"   ({func_key})" if several_tests else ""), header]
        lines += [next(body) for _row in rows]
    lines += _conditions_section(history)
    lines += [
        "",
        "vs previous run: + regression, - improvement, = same, ~ inconclusive; decided on the raw samples "
        f"(Mann-Whitney U, {history.policy}), never on a bare percentage: runs with medians only are "
        "inconclusive; ⚠ = the two runs' conditions differ",
    ]
    return "\n".join(lines) + "\n"


def _where(history: KernelHistory) -> str:
    if history.persisted:
        return f"store {display_path(Path(history.store))}"
    if history.source == "recorded":
        return f"recorded session {display_path(history.kernel_dir)}, imported in memory (nothing written)"
    # reading never writes the store (issue 33): the logs are imported in memory; `run` records
    return f"kernel dir {display_path(history.kernel_dir)}, its logs imported in memory (nothing written; `run` records)"


class HistoryCommand(Command):
    name = "history"
    group = None
    help = "run history per config: medians, trend, regression flags, provenance"
    description = (
        "Every recorded run of each config (median, raw samples kept, GPU, harness, run time) with a trend "
        "sparkline and, between consecutive runs, regression / improvement / same / inconclusive decided "
        "on the raw samples (Mann-Whitney U + bootstrap CI of the median ratio), never on a bare "
        "percentage. Reading writes nothing: the kernel dir's store and logs (or the recorded session) "
        "are imported in memory; only `run` records into <kernel>/workbench/history.sqlite."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument(
            "--config",
            metavar="PARAMS",
            default=None,
            help="one config: its params string (or node id), e.g. "
            "True-False-False-False-2048-2048-2048-0-0-torch.float16",
        )
        parser.add_argument(
            "--backend",
            "-b",
            action="append",
            metavar="B",
            default=None,
            help="only this backend's runs (repeatable), e.g. cutile-rs, cutile, triton",
        )
        fmt = parser.add_mutually_exclusive_group()
        fmt.add_argument(
            "--json", action="store_true", help="machine-readable JSON (runs with full provenance)"
        )
        fmt.add_argument("--csv", action="store_true", help="CSV, one row per (config, run)")

    def run(self, args: argparse.Namespace, stream: TextIO | None = None) -> int:
        out = stream or sys.stdout
        ws = stage_e.open_kernel(
            args.kernel, out_root=path_arg(args.out_root), tilegym=path_arg(args.tilegym), strict=False
        )
        # issue 18 §5: a stand-in is named on every face; asked first, so that the history import takes the
        # logs the session parsed for it (a cold cache) instead of parsing them again
        stand_ins = workspace_stand_ins(ws).lines()
        history = history_service.kernel_history(ws, config=args.config, backends=args.backend or ())
        if args.json:
            out.write(
                json.dumps({**history_service.history_json(history), "stand_ins": stand_ins}, indent=2) + "\n"
            )
        elif args.csv:
            out.write(history_service.history_csv(history))
        else:
            text = render_history_text(history, _where(history))
            head, _, rest = text.partition("\n")
            out.write("\n".join([head, *stand_ins, rest]) if stand_ins else text)
        for line in history.ignored:  # stderr: stdout stays the table or the document
            print(f"warning: {line}", file=sys.stderr)
        return 0


COMMANDS = (HistoryCommand(),)
