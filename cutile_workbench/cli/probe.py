"""``probe <kernel> --config PARAMS``: Nsight Compute on one profiled call of each side of one config.

Contract: goes through :mod:`cutile_workbench.services.probe`. Prints, per side, the test node id and the
kernel ncu is filtered to, then either

- ``--print-command``: the exact shell line of each side (``$ cd … && … ncu … python -m pytest …``)
  and nothing is run or written (exit 0);
- ``--csv FILE`` (one ``--backend``): files a CSV ncu already wrote — the printed line run on a GPU
  node — as that side's probe;
- else runs ncu on each side (``--timeout`` seconds each) and files the results under the kernel's
  ``workbench/probes/``.

Then the side-by-side table of the config's filed probes (candidate, reference). Exit 2 for bad
input; for the read-only recorded session (E's message, before anything runs); and when ncu or a
GPU is missing here, after printing the shell lines to run on a GPU node. A side whose probe failed
is named on stderr and makes the exit 2; the other side is still filed and shown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from cutile_workbench.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    Command,
    add_kernel_args,
    path_arg,
    positive_seconds,
)
from cutile_workbench.cli.doctor import refuse
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.services import probe as probe_service


def render_table(rows: list[tuple[str, str, str]], cand: str, base: str) -> str:
    if not rows:
        return "no ncu probe filed for this config yet\n"
    w0 = max(len("metric"), *(len(m) for m, _c, _b in rows)) + 2
    w1 = max(len(cand), *(len(c) for _m, c, _b in rows)) + 2
    w2 = max(len(base), *(len(b) for _m, _c, b in rows))
    lines = [f"{'metric':<{w0}}{cand:>{w1}}  {base:>{w2}}"]
    lines += [f"{m:<{w0}}{c:>{w1}}  {b:>{w2}}" for m, c, b in rows]
    return "\n".join(lines) + "\n"


class ProbeCommand(Command):
    name = "probe"
    group = None
    help = "Nsight Compute on one profiled call of each side of a config"
    description = (
        "Run ncu on one profiled call of the candidate and the reference for one config (the kernel "
        "and test node from the per-launch captures; autotuning and JIT outside the profiled range), "
        "file the results under <kernel>/workbench/probes/ and print them side by side: duration, "
        "DRAM bytes and throughput, SM and tensor-pipe throughput, achieved/theoretical occupancy, "
        "registers, local-memory spills, shared memory. F's reports read the filed probes.\n"
        "Without ncu or a GPU here it exits 2 and prints the shell line to run on a GPU node; "
        "--csv files the CSV that line wrote."
    )

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_kernel_args(parser)
        parser.add_argument(
            "--config",
            required=True,
            metavar="PARAMS",
            help="the params string of an E row, e.g. True-True-False-False-2048-2048-2048-0-0-torch.float16",
        )
        parser.add_argument(
            "--backend",
            "-b",
            action="append",
            metavar="B",
            help="only this side (the candidate or the reference backend; repeatable)",
        )
        parser.add_argument(
            "--timeout",
            type=positive_seconds,
            default=600.0,
            metavar="S",
            help="seconds per ncu run (default 600); the child's process group is killed after",
        )
        parser.add_argument(
            "--print-command", action="store_true", help="print each side's exact shell line and run nothing"
        )
        parser.add_argument(
            "--csv",
            metavar="FILE",
            help="file this ncu CSV as the probe of the one --backend (instead of running ncu)",
        )
        parser.add_argument(
            "--ncu", default="ncu", metavar="PATH", help="the ncu executable (default: ncu on PATH)"
        )

    def run(self, args: argparse.Namespace, out: TextIO | None = None) -> int:
        out = out or sys.stdout
        if args.csv and len(args.backend or ()) != 1:
            raise InputError("--csv files one side: name it with exactly one --backend", key="--csv")
        request = probe_service.ProbeRequest(
            args.kernel,
            args.config,
            out_root=path_arg(args.out_root),
            tilegym=path_arg(args.tilegym),
            backends=tuple(args.backend or ()),
            python=sys.executable,
            ncu=args.ncu,
        )
        plan = probe_service.plan_probe(request)
        cand, base = plan.candidate_backend, plan.baseline_backend
        out.write(
            f"probe {plan.ws.kernel} {plan.row.params}: candidate {cand} vs reference {base} "
            f"({'TileGym test_perf' if plan.suite == 'tilegym' else 'built-in profile'})\n"
        )
        for why in plan.skipped:
            print(f"warning: {why}", file=sys.stderr)
        for side in plan.sides:
            out.write(f"  {side.spec.backend}: {side.spec.nodeid}  kernel {side.spec.kernel_name}\n")
        if not plan.sides:
            raise InputError(
                "nothing to probe: no side of this config has a recorded kernel name", key="--config"
            )
        if args.print_command:
            self._print_lines(plan, out)
            return EXIT_OK
        read_only = probe_service.read_only(plan.ws)
        if read_only:
            raise InputError(read_only, path=str(plan.ws.kernel_dir))
        failed = (
            self._file_csv(plan, Path(args.csv), out) if args.csv else self._run_all(plan, args.timeout, out)
        )
        if failed is None:
            return EXIT_USAGE
        probes = probe_service.load(plan.ws)
        out.write("\n" + render_table(probe_service.probe_rows(probes, cand, plan.row), cand, base))
        return EXIT_USAGE if failed else EXIT_OK

    @staticmethod
    def _print_lines(plan: probe_service.ProbePlan, out: TextIO) -> None:
        for side in plan.sides:
            out.write(f"\n# {side.spec.backend} (CSV → {side.csv_path})\n$ {side.shell}\n")

    def _run_all(self, plan: probe_service.ProbePlan, timeout_s: float, out: TextIO) -> bool | None:
        """Run every side; True when one failed, None when ncu/GPU are missing (lines printed)."""
        if refuse("probe", python=sys.executable, tilegym=None) is not None:  # doctor's checks first
            return None
        why = probe_service.cannot_run(plan)
        if why:
            print(
                f"error: cannot run the probe here: {why}; run these lines on a GPU node (then file each CSV "
                "with --backend B --csv FILE):",
                file=sys.stderr,
            )
            self._print_lines(plan, out)
            return None
        failed = False
        for side in plan.sides:
            try:
                _result, saved = probe_service.run_side(plan, side, timeout_s=timeout_s)
            except WorkbenchError as exc:
                print(f"error: {side.spec.backend}: {exc}", file=sys.stderr)
                failed = True
                continue
            out.write(f"filed {saved.relative_to(plan.ws.kernel_dir).as_posix()}\n")
        return failed

    @staticmethod
    def _file_csv(plan: probe_service.ProbePlan, csv_file: Path, out: TextIO) -> bool:
        (side,) = plan.sides
        _result, saved = probe_service.file_csv(plan, side, csv_file)
        out.write(f"filed {saved.relative_to(plan.ws.kernel_dir).as_posix()} from {csv_file}\n")
        return False


COMMANDS = (ProbeCommand(),)
