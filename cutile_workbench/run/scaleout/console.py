"""The CLI face of the scale-out service: ``run --gpus …`` / ``run --slurm …`` flags, progress lines, exit code.

Contract:
- :func:`add_arguments` adds the scale-out flags to the ``run`` parser; :func:`wanted` says whether
  the parsed args ask for scale-out; :func:`request_from_args` turns them plus the planned backend
  runs into a typed :class:`~cutile_workbench.run.scaleout.service.ScaleoutRequest` (InputError on bad flags:
  ``--gpus`` with ``--slurm``, SLURM flags without ``--slurm``, an unknown GPU).
- :func:`run_console` runs :func:`~cutile_workbench.run.scaleout.service.run_scaled` in a worker thread and
  prints one line per finished config (``[done/total] s<shard> <backend> <params> <OUTCOME>
  <median>``), shard and SLURM task state changes, the merge and a closing summary. Ctrl-C,
  SIGTERM and SIGHUP cancel (local workers stopped, SLURM array scancel'ed: no orphaned jobs);
  nothing is merged then. Exit: 0 merged and every config passed or skipped; 1 failed/not-run
  configs, or shards to rerun; 2 bad input, nothing selected, cancelled, or SLURM unavailable.
  Errors go to ``err`` as ``error: <file:line: key: message>``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from cutile_workbench.artifacts.events import Event
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.infra.cancel import run_cancellable, signal_name
from cutile_workbench.run.results import raw_log_destination
from cutile_workbench.run.scaleout.devices import parse_gpus, resolve_devices
from cutile_workbench.run.scaleout.plan import RoleRun
from cutile_workbench.run.scaleout.progress import ProgressBoard
from cutile_workbench.run.scaleout.service import ScaleoutRequest, ScaleoutResult, run_scaled
from cutile_workbench.run.scaleout.slurm import SlurmOptions

_SLURM_FLAGS = ("partition", "nodes", "gpus_per_node", "time", "account", "sbatch_arg", "poll")


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scale-out (one shard per GPU; each config measured on one GPU)")
    g.add_argument(
        "--gpus",
        metavar="all|0,1,…",
        help="shard the configs over this node's GPUs, one worker per GPU (a repeated index, e.g. 0,0, "
        "runs two shards on one GPU: timings interfere)",
    )
    g.add_argument(
        "--slurm",
        action="store_true",
        help="submit one sbatch --array job (one task per node), watch it, merge the shards",
    )
    g.add_argument("--partition", help="SLURM partition")
    g.add_argument(
        "--nodes", type=int, default=None, metavar="N", help="SLURM array tasks, one node each (default 1)"
    )
    g.add_argument(
        "--gpus-per-node",
        type=int,
        default=None,
        metavar="G",
        help="GPUs (= shards) per array task (default 1; 0 = CPU-only suites)",
    )
    g.add_argument("--time", metavar="LIMIT", help="SLURM time limit per task (e.g. 2:00:00)")
    g.add_argument("--account", help="SLURM account")
    g.add_argument(
        "--sbatch-arg",
        action="append",
        default=None,
        metavar="ARGS",
        help="extra sbatch arguments, e.g. --sbatch-arg='--qos=short --exclusive' (repeatable)",
    )
    g.add_argument(
        "--poll",
        type=float,
        default=None,
        metavar="S",
        help="with --slurm: seconds between squeue polls (default 5)",
    )
    g.add_argument(
        "--fresh",
        action="store_true",
        help="re-measure every shard even if an unmerged earlier attempt completed some",
    )


def wanted(args: argparse.Namespace) -> bool:
    """True when any scale-out flag was given (a SLURM flag without ``--slurm`` is then an error, not ignored)."""
    given = [f for f in (*_SLURM_FLAGS, "fresh") if getattr(args, f, None) not in (None, [], False)]
    return bool(getattr(args, "gpus", None) or getattr(args, "slurm", False) or given)


def request_from_args(args: argparse.Namespace, runs: Iterable[Any], out: KernelPaths) -> ScaleoutRequest:
    """Typed request from the parsed flags and the backend runs ``plan_runs`` made (backend, role, spec)."""
    roles = tuple(RoleRun(backend=r.backend, role=r.role, spec=r.spec) for r in runs)
    slurm_given = [
        f"--{f.replace('_', '-')}" for f in _SLURM_FLAGS if getattr(args, f, None) not in (None, [])
    ]
    if args.slurm and args.gpus:
        raise InputError("--gpus shards over this node; with --slurm use --gpus-per-node", key="--gpus")
    if args.slurm:
        opts = SlurmOptions(
            nodes=args.nodes if args.nodes is not None else 1,
            gpus_per_node=args.gpus_per_node if args.gpus_per_node is not None else 1,
            partition=args.partition,
            time=args.time,
            account=args.account,
            sbatch_args=tuple(args.sbatch_arg or ()),
            **({"poll_s": args.poll} if args.poll is not None else {}),
        )
        opts.validate()
        return ScaleoutRequest(
            kernel=args.kernel, out=out, roles=roles, mode="slurm", slurm=opts, fresh=args.fresh
        )
    if slurm_given:
        raise InputError(f"{', '.join(slurm_given)} only apply with --slurm", key=slurm_given[0])
    if not args.gpus:
        raise InputError("--fresh applies to a sharded run: add --gpus or --slurm", key="--fresh")
    entries = parse_gpus(args.gpus)
    devices = resolve_devices(entries, probe=not getattr(args, "skip_gpu_check", False))
    return ScaleoutRequest(
        kernel=args.kernel, out=out, roles=roles, mode="local", devices=tuple(devices), fresh=args.fresh
    )


def _median_us(ev: Event) -> str:
    bench = ev.get("benchmark")
    rec = bench.get(ev.get("framework")) if isinstance(bench, dict) else None
    fwd = rec.get("forward") if isinstance(rec, dict) else None
    median = fwd.get("median") if isinstance(fwd, dict) else None
    return (
        f"{median * 1000:10.2f} us"
        if isinstance(median, (int, float)) and not isinstance(median, bool)
        else ""
    )


class ConsolePrinter:
    """Turns the service's event stream into lines (see the module contract); called from one thread."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.board = ProgressBoard()
        self.medians: dict[tuple[int, str], str] = {}
        self.width = 1

    def __call__(self, ev: Event) -> None:
        self.board.feed(ev)
        line = self._line(ev)
        if line:
            self.stream.write(line + "\n")
            self.stream.flush()

    def _line(self, ev: Event) -> str | None:
        k = ev.event
        shard = ev.get("shard")
        if k == "scaleout_plan":
            self.width = len(str(ev.get("configs") or 0))
            head = (
                f"== {ev.get('kernel')}: plan {ev.get('plan_id')}, {ev.get('configs')} config(s) in {ev.get('rows')} "
                f"row(s) over {len(ev.get('shards') or [])} shard(s) ({ev.get('mode')}); dir {ev.get('plan_dir')}"
            )
            lines = [head]
            for s in ev.get("shards") or []:
                lines.append(
                    f"   shard {s['index']}: {s['configs']} config(s), {s['rows']} row(s)"
                    + ("  [complete: kept]" if s.get("state") == "complete" else "")
                )
            lines += [f"   warning: {w}" for w in ev.get("warnings") or []]
            return "\n".join(lines)
        if k == "scaleout_submit":
            return (
                f"== submitted SLURM job {ev.get('job_id')}: {len(ev.get('tasks') or [])} array task(s); "
                f"per-task logs {ev.get('logs')}"
            )
        if k == "scaleout_attach":
            return f"== job {ev.get('job_id')} of this plan is still queued/running: watching it (no new submission)"
        if k == "scaleout_task_state":
            where = f" on {ev.get('nodes')}" if ev.get("nodes") else ""
            why = f" ({ev.get('reason')})" if ev.get("reason") not in (None, "", "None") else ""
            code = f" exit {ev.get('exit_code')}" if ev.get("exit_code") else ""
            return (
                f"   task {ev.get('task')} (shard(s) {ev.get('shards')}): {ev.get('state')}{where}{why}{code}"
            )
        if k == "scaleout_shard_state":
            state = ev.get("state")
            if state == "running":  # the worker's own shard_start line says where; flag a shared GPU here
                return (
                    f"   shard {shard}: shares GPU {ev.get('device')} with another shard"
                    if ev.get("shared_device")
                    else None
                )
            detail = f": {ev.get('detail')}" if ev.get("detail") and state != "complete" else ""
            return f"   shard {shard}: {state}" + (f" on {ev.get('host')}" if ev.get("host") else "") + detail
        if k == "shard_start":
            name, uuid = ev.get("gpu_name"), ev.get("gpu_uuid")
            gpu = (
                "no GPU pinned"
                if ev.get("device") is None
                else f"GPU {ev.get('device')} "
                + (f"({name}, {uuid})" if name != "unknown" else "(model unknown: no nvidia-smi answer)")
            )
            return f"   shard {shard}: running on {ev.get('host')}, {gpu}"
        if k == "record" and isinstance(shard, int):
            self.medians[(shard, str(ev.get("nodeid")))] = _median_us(ev)
            return None
        if k == "test_finish" and isinstance(shard, int):
            done, total, _failed = self.board.totals()
            nodeid = str(ev.get("nodeid"))
            params = split_nodeid(nodeid)[2] or nodeid
            extra = self.medians.pop((shard, nodeid), "")
            if not extra and ev.get("source") == "runner":
                extra = "(killed/crashed; see the shard's raw log)"
            return (
                f"[{done:>{self.width}}/{total}] s{shard} {ev.get('backend', '')!s:<12} {params:<40} "
                f"{str(ev.get('outcome', '?')).upper():<7} {extra}"
            ).rstrip()
        if k == "runner_resume" and isinstance(shard, int):
            return f"   shard {shard}: … resuming with {len(ev.get('remaining') or [])} config(s) left"
        if k == "shard_role_finish":
            return f"   shard {shard}: {ev.get('backend')}: {ev.get('summary')}"
        if k in ("scaleout_cancel", "scaleout_cancelled"):
            return f"   {ev.get('detail')}"
        if k == "scaleout_note":
            return f"   note: {ev.get('note')}"
        if k == "scaleout_merge":
            root = str(ev.get("kernel_dir") or "")
            rel = sorted({str(p).removeprefix(root + "/") for p in ev.get("written") or []})
            lines = [f"== merged plan {ev.get('plan_id')} into {root}: {', '.join(rel)}"]
            models = ev.get("gpu_models") or []
            if len(models) > 1:
                lines.append(
                    f"   warning: rows were measured on {len(models)} GPU models: {', '.join(models)}"
                )
            for row in ev.get("mixed_gpu_rows") or []:
                lines.append(f"   MIXED GPUs: {row}")
            lines += [f"   note: {n}" for n in ev.get("notes") or []]
            return "\n".join(lines)
        return None


def run_console(req: ScaleoutRequest, stream: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the request with progress lines; see the module contract."""
    out, errs = stream or sys.stdout, err or sys.stderr
    printer = ConsolePrinter(out)

    def on_signal(signum: int) -> None:
        errs.write(f"cancelling ({signal_name(signum)}): stopping the shards; nothing will be merged\n")

    # Signals become a cancel (cutile_workbench.infra.cancel says why not KeyboardInterrupt): a watcher that
    # returned early would orphan the workers or the SLURM job.
    try:
        result = run_cancellable(
            lambda cancel: run_scaled(req, on_event=printer, cancel=cancel),
            on_signal=on_signal,
            name="scaleout",
        )
    except WorkbenchError as exc:
        errs.write(f"error: {exc}\n")
        return exc.exit_code
    return _closing(req, result, out, errs)


def _closing(req: ScaleoutRequest, result: ScaleoutResult, out: TextIO, errs: TextIO) -> int:
    rc = result.rc
    for i, state, detail in [
        (i, s.state, s.detail) for i, s in sorted(result.statuses.items()) if not s.done
    ]:
        errs.write(f"shard {i}: {state}" + (f": {detail}" if detail else "") + "\n")
    if result.cancelled:
        errs.write(
            f"cancelled; nothing merged. Shards finished so far are kept under {result.paths.root}: rerun the "
            "same command to run only the rest\n"
        )
        return 2
    if result.merged is None:
        errs.write(
            f"{len(result.not_complete)} shard(s) did not complete; nothing merged. Rerun the same command to "
            "run only those\n"
        )
        return rc
    for role, r in result.merged.results.items():
        backend = result.plan.role_run(role).backend
        for nodeid, reason in r.failed.items():
            out.write(f"    FAILED {backend} {split_nodeid(nodeid)[2] or nodeid}: {reason}\n")
        for nodeid, reason in r.not_run.items():
            out.write(f"    not run {backend} {split_nodeid(nodeid)[2] or nodeid}: {reason}\n")
        counts = [sum(1 for o in r.outcomes.values() if o == w) for w in ("passed", "skipped")]
        shards = sum(1 for s in result.plan.shards if s.by_role.get(role))
        out.write(
            f"    {backend} ({role}): {counts[0]} passed, {len(r.failed)} failed, {counts[1]} skipped, "
            f"{len(r.not_run)} not run over {shards} shard(s); log: {raw_log_destination(role, req.out)}\n"
        )
    empty = [rr.backend for rr in req.roles if not any(s.by_role.get(rr.role) for s in result.plan.shards)]
    for backend in empty:
        out.write(f"    nothing selected for {backend}\n")
    return max(rc, 2 if empty else 0)
