"""``run <kernel>``: a live benchmark run, one child pytest per backend, results into the artifact layout.

Contract: :func:`add_run_arguments` is the one place the flags are declared and
:func:`run_request` the one place they become a :class:`~cutile_workbench.services.runs.RunRequest`;
:mod:`cutile_workbench.services.runs` resolves the suite (TileGym's ``tests/ops/test_<kernel>.py`` with
``--tilegym DIR`` or ``$TILEGYM_PATH``, else the built-in profile) and the backends. One line is
printed per finished config; the results are laid into ``<out-root>/<kernel>/``
(``cutile_workbench.run.results.write_results``). Without a GPU (``nvidia-smi`` absent/failing **and**
``torch.cuda`` unavailable in the child Python) it says so, points at the profile's recorded
session, and exits 2. Exit: 0 every config passed or skipped; 1 some config failed or did not run
(results are still written); 2 bad input / no GPU / cancelled (Ctrl-C, SIGTERM or SIGHUP: the pytest
child is stopped, nothing written; the live log stays in ``workbench/runs/``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from typing import TextIO

from cutile_workbench.cli.common import Command, path_arg, positive_seconds
from cutile_workbench.cli.doctor import refuse
from cutile_workbench.cli.timeline import display_path
from cutile_workbench.services.runs import (
    BackendRun,
    Event,
    KernelPaths,
    RunRequest,
    RunResult,
    gpu_probe,
    parse_env_items,
    plan_runs,
    raw_log_destination,
    run,
    run_cancellable,
    signal_name,
    split_nodeid,
    write_results,
)
from cutile_workbench.services.session import command_line
from cutile_workbench.services.sharded import console as scaleout

RUN_DESCRIPTION = """\
Run a kernel's perf suite live and lay the results into <out-root>/<kernel>/ (TileGym's layout).

Which suite: TileGym's tests/ops/test_<kernel>.py when a checkout is known (--tilegym DIR, else
$TILEGYM_PATH, as for every command), else the built-in profile of that name (cutile_workbench/profiles/); --profile
picks the profile. One child pytest per backend, one line per finished config. Backends map to
layout slots: the candidate -> reports/agent_logs/perf_cutile_rs.full.txt, cutile ->
baseline_perf_cutile.txt, triton* -> baseline_perf_triton_tileir.txt; others are refused.

Without a GPU it says so and points at the profile's recorded H200 session.
Exit: 0 all passed or skipped; 1 some config failed or did not run (results still written);
2 bad input, no GPU, or cancelled (Ctrl-C: nothing written)."""


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Every flag of ``run`` (its one declaration; :func:`run_request` reads them)."""
    parser.add_argument(
        "kernel",
        help="profile name (see cutile_workbench/profiles/) or TileGym kernel (tests/ops/test_<kernel>.py)",
    )
    # SUPPRESS: these may also come before the sub-command (cutile-workbench's global flags).
    parser.add_argument(
        "--tilegym",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="run TileGym's tests/ops/test_<kernel>.py from this checkout (else $TILEGYM_PATH)",
    )
    parser.add_argument(
        "--out-root",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="artifact root (default: $CUTILE_KERNEL_OUT_ROOT)",
    )
    parser.add_argument(
        "--backend",
        "-b",
        action="append",
        metavar="B",
        help="backend (record key, e.g. cutile, triton, cutile-rs); repeatable; "
        "default: the profile's candidate and baseline (TileGym: cutile-rs)",
    )
    parser.add_argument(
        "-k", dest="k_expr", metavar="EXPR", help="pytest -k config filter, ANDed with the backend"
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=600.0,
        metavar="S",
        help="kill a test that makes no progress for S seconds (default 600, TileGym's --timeout)",
    )
    parser.add_argument(
        "--total-timeout",
        type=positive_seconds,
        default=None,
        metavar="S",
        help="wall limit of each backend's run",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="Python of the child pytest (default: this one)"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="extra environment for the child, e.g. CUPTI=1 WARMUP=100 REP=50 MIN_REP=2",
    )
    harness = parser.add_mutually_exclusive_group()
    harness.add_argument(
        "--harness",
        dest="tilegym_harness",
        action="store_false",
        help="measure with the workbench CUPTI harness (the default): per-launch data, "
        "raw samples, bootstrap CIs, a CUDA-event self-check per config",
    )
    harness.add_argument(
        "--tilegym-harness",
        dest="tilegym_harness",
        action="store_true",
        help="measure with TileGym's own benchmark_fn_cupti (torch.profiler per sample; "
        "medians only, no per-launch timeline)",
    )
    parser.set_defaults(tilegym_harness=False)
    parser.add_argument(
        "--dump-ir",
        action="store_true",
        help="dump the Tile IR both sides compile (cutile-rs CUTILE_DUMP=ir, cuTile "
        "CUDA_TILE_DUMP_TILEIR) and file it per config under <kernel>/workbench/ir/",
    )
    parser.add_argument(
        "--compile-cache",
        metavar="DIR",
        default=None,
        help="one JIT compile cache for every run and scale-out shard (cuTile's "
        "CUDA_TILE_CACHE_DIR, TRITON_CACHE_DIR, TILECPP_CACHE_DIR under DIR; on the shared "
        "filesystem for --slurm); each run records its cold/warm split in session.json",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run the built-in profile of that name even when a TileGym checkout has the kernel",
    )
    parser.add_argument(
        "--suite", metavar="FILE", help="run this TileGym-convention test file instead of the profile's"
    )
    parser.add_argument(
        "--skip-gpu-check",
        action="store_true",
        help="run even where no GPU is visible (CPU-only suites, replays)",
    )
    scaleout.add_arguments(parser)  # --gpus / --slurm (issue #13): see RunCommand.run


def run_request(args: argparse.Namespace) -> RunRequest:
    """The flags of :func:`add_run_arguments` as the runner service's request (InputError for bad --env)."""
    return RunRequest(
        kernel=args.kernel,
        out_root=path_arg(getattr(args, "out_root", None)),
        tilegym=path_arg(getattr(args, "tilegym", None)),
        prefer_profile=args.profile,
        backends=tuple(args.backend or ()),
        k_expr=args.k_expr,
        per_test_timeout_s=args.timeout,
        total_timeout_s=args.total_timeout,
        python=args.python,
        env=parse_env_items(args.env),
        workbench_harness=not args.tilegym_harness,
        suite=path_arg(args.suite),
        dump_ir=args.dump_ir,
        compile_cache=path_arg(args.compile_cache),
    )


class _Progress:
    """One line per finished config; called from the runner's dispatcher thread."""

    def __init__(self, backend: str, stream: TextIO) -> None:
        self.backend = backend
        self.stream = stream
        self.total = 0
        self.done = 0
        self.medians: dict[str, tuple[float | None, int | None]] = {}
        self._lock = threading.Lock()

    def __call__(self, ev: Event) -> None:
        with self._lock:
            if ev.event == "collected" and not self.total:
                self.total = len(ev.get("nodeids") or [])
            elif ev.event == "record":
                self.medians[str(ev.get("nodeid"))] = _median_and_launches(ev)
            elif ev.event == "test_finish":
                self.done += 1
                nodeid = str(ev.get("nodeid"))
                params = split_nodeid(nodeid)[2] or nodeid
                outcome = str(ev.get("outcome", "?")).upper()
                median, launches = self.medians.get(nodeid, (None, None))
                extra = ""
                if median is not None:
                    extra = f"  {median * 1000:10.2f} us"
                    if launches is not None:
                        extra += f"  {launches} launch{'es' if launches != 1 else ''}/call"
                elif ev.get("source") == "runner":
                    extra = "  (killed/crashed; see the reason below)"
                width = len(str(self.total or "?"))
                self.stream.write(
                    f"[{self.done:>{width}}/{self.total or '?'}] {self.backend:<14} {params:<40} "
                    f"{outcome:<7}{extra}\n"
                )
            elif ev.event == "runner_resume":
                self.stream.write(f"    … resuming with {len(ev.get('remaining') or [])} config(s) left\n")
            self.stream.flush()


def _median_and_launches(ev: Event) -> tuple[float | None, int | None]:
    bench = ev.get("benchmark") or {}
    rec = bench.get(ev.get("framework")) if isinstance(bench, dict) else None
    fwd = rec.get("forward") if isinstance(rec, dict) else None
    if not isinstance(fwd, dict):
        return None, None
    median = fwd.get("median")
    launches = fwd.get("launches_per_call")
    times = fwd.get("kernel_times")
    if isinstance(times, list) and times:
        with contextlib.suppress(TypeError):
            launches = sum(int(k.get("count", 0)) for k in times if isinstance(k, dict))
    return (
        float(median) if isinstance(median, (int, float)) else None,
        int(launches) if isinstance(launches, int) else None,
    )


def _run_with_ctrl_c(br: BackendRun, out: KernelPaths, stream: TextIO) -> RunResult:
    """Run in a worker thread; Ctrl-C, SIGTERM and SIGHUP cancel it (the runner kills the pytest child's
    group and the result says ``cancelled``; nothing is written): :func:`cutile_workbench.infra.cancel.run_cancellable`."""
    progress = _Progress(br.backend, stream)

    def on_signal(signum: int) -> None:
        print(
            f"cancelling ({signal_name(signum)}): stopping the pytest child; nothing will be written",
            file=sys.stderr,
        )

    return run_cancellable(
        lambda cancel: run(br.spec, out, on_event=progress, cancel=cancel), on_signal=on_signal, name="runner"
    )


class RunCommand(Command):
    name = "run"
    group = None
    help = "run a kernel's perf suite live (TileGym or a built-in profile) and write the results"
    description = RUN_DESCRIPTION

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_run_arguments(parser)

    def run(self, args: argparse.Namespace, stream: TextIO | None = None) -> int:
        out_stream = stream or sys.stdout
        plan = plan_runs(run_request(args))
        if plan.suite_note:
            print(f"note: {plan.suite_note}", file=sys.stderr)
        refused = refuse("run", python=args.python, tilegym=None)  # doctor's checks, before any GPU work
        if refused is not None:
            return refused
        # --gpus pins one worker per GPU itself (nvidia-smi), --slurm runs on compute nodes: no probe here
        if scaleout.wanted(args):
            return scaleout.run_console(scaleout.request_from_args(args, plan.runs, plan.out), out_stream)
        if not args.skip_gpu_check:
            present, how = gpu_probe(args.python)
            if not present:
                print(f"No GPU on this machine: {how}.", file=sys.stderr)
                if plan.recorded is not None:
                    rel = display_path(plan.recorded)
                    root = display_path(plan.recorded.parent)
                    open_line = command_line("--out-root", root, args.kernel)
                    timeline = command_line("timeline", args.kernel, "--config", "PARAMS")
                    print(
                        f"A recorded real H200 session of {args.kernel} is at {rel} (see its README); "
                        f"open it with: {open_line}  (or: {timeline})",
                        file=sys.stderr,
                    )
                print("(--skip-gpu-check runs anyway, for CPU-only suites.)", file=sys.stderr)
                return 2
        worst = 0
        out = plan.out
        for br in plan.runs:
            out_stream.write(
                f"== {args.kernel}: {br.backend} ({br.role}) — {br.spec.test_target}"
                f"{' -k ' + repr(br.spec.k_expr) if br.spec.k_expr else ''}\n"
            )
            out_stream.flush()
            result = _run_with_ctrl_c(br, out, out_stream)
            if result.cancelled:
                print(
                    f"cancelled; nothing written (live log: {out.workbench_dir / 'runs' / (br.role + '.raw.log')})",
                    file=sys.stderr,
                )
                return 2
            for nodeid, reason in result.failed.items():
                out_stream.write(f"    FAILED {split_nodeid(nodeid)[2] or nodeid}: {reason}\n")
            for nodeid, reason in result.not_run.items():
                out_stream.write(f"    not run {split_nodeid(nodeid)[2] or nodeid}: {reason}\n")
            for note in result.notes:
                out_stream.write(f"    note: {note}\n")
            if not result.collected:
                out_stream.write(f"    nothing selected (pytest rc {result.rc}):\n")
                out_stream.write(
                    "".join(f"      {ln}\n" for ln in result.collect_output.strip().splitlines()[-15:])
                )
                worst = max(worst, 2)
                continue
            write_results(result, br.spec, out)
            out_stream.write(
                f"    {result.summary_line()}; log: {display_path(raw_log_destination(br.role, out))}\n"
            )
            if not any(e.event == "record" for e in result.events):
                out_stream.write(
                    f"    warning: no config of {br.backend} produced a benchmark record "
                    f"(E would have no {'candidate' if br.role == 'candidate' else 'baseline'} "
                    "medians)\n"
                )
                worst = max(worst, 1)
            out_stream.flush()
            if result.failed or result.not_run or result.rc != 0:
                worst = max(worst, 1)
        return worst


COMMANDS = (RunCommand(),)
