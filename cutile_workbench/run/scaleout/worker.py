"""Shard worker: ``python -m cutile_workbench.run.scaleout.worker --plan PLAN (--shard I | --array-task T --tasks FILE)``.

Contract:
- ``--shard I`` runs shard I on the GPU this process was pinned to (the first
  ``CUDA_VISIBLE_DEVICES`` entry; none: unpinned, CPU-only suites): one
  :func:`cutile_workbench.run.runner.run` per role, in plan order, each restricted to the shard's planned ids
  (``-p cutile_workbench.run.scaleout.select_plugin --workbench-only-ids ids.<role>.txt``) and pinned with
  ``CUDA_VISIBLE_DEVICES``/``CUDA_DEVICE_ORDER=PCI_BUS_ID`` in ``RunSpec.env``, so each config is
  measured on exactly one GPU and the candidate and baselines of a row on the same one. Fault
  isolation, resume and raw logs are the runner's, unchanged. A role that ran to its end is laid
  into the shard's kernel dir by :func:`cutile_workbench.run.results.write_results`; a cancelled one writes
  nothing (as in a single run).
- It holds ``locks/<I>.lock`` (``flock``) while it runs: a second worker on the same shard exits
  3 at once and touches nothing.
- Manifest ``shard.json``: ``running`` at start (host, GPU name/UUID, pid, SLURM ids), then the final
  state (see :mod:`cutile_workbench.run.scaleout.plan`). Planned ids this host did not collect become
  ``not run`` and make the shard ``incomplete``.
- Progress (``progress.jsonl``, one ``os.write`` per line): ``shard_start {host, device, gpu_name,
  gpu_uuid, pid, slurm}``, then each runner event except ``launches``/``progress`` with ``role`` and
  ``backend`` added, ``shard_role_finish {role, rc, summary}`` and ``shard_finish {state, detail}``.
- SIGTERM, SIGINT and SIGHUP (scancel, a SLURM time limit, the local executor's cancel) cancel
  the running role: the runner kills its pytest child's process group, the manifest says
  ``cancelled``.
- Exit status: 0 complete (failed configs are results), 1 incomplete, 2 failed (an error of ours,
  bad plan), 3 busy, 143 cancelled.
- ``--array-task T --tasks FILE`` is one SLURM array task: it runs the not-yet-complete shards that
  FILE (``{"tasks": [[shard, ...], ...]}``) lists for T — one in this process, several through
  :class:`cutile_workbench.run.scaleout.local.LocalExecutor` on this allocation's visible GPUs. Exit: the worst
  of its shards'.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cutile_workbench.artifacts.events import Event, EventWriter
from cutile_workbench.errors import WorkbenchError
from cutile_workbench.run.results import write_results
from cutile_workbench.run.runner import run
from cutile_workbench.run.scaleout.devices import identify, pinned_env, visible_gpus
from cutile_workbench.run.scaleout.plan import (
    PlanPaths,
    ShardPlan,
    ShardStatus,
    host_name,
    load_plan,
    read_status,
    write_status,
)
from cutile_workbench.run.scaleout.progress import NOT_FORWARDED

EXIT_FOR_STATE = {"complete": 0, "incomplete": 1, "failed": 2, "cancelled": 143}
EXIT_BUSY = 3
SELECT_PLUGIN = "cutile_workbench.run.scaleout.select_plugin"
_SLURM_VARS = (
    "SLURM_JOB_ID",
    "SLURM_ARRAY_JOB_ID",
    "SLURM_ARRAY_TASK_ID",
    "SLURMD_NODENAME",
    "SLURM_CLUSTER_NAME",
)


@contextlib.contextmanager
def shard_lock(path: Path) -> Iterator[IO[str] | None]:
    """``flock`` the shard's lock file; yields None when another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+", encoding="utf-8")  # closed below
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield None
            return
        fh.seek(0)
        fh.truncate()
        fh.write(f"{host_name()} pid {os.getpid()}\n")
        fh.flush()
        yield fh
    finally:
        fh.close()


def slurm_ids(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = os.environ if environ is None else environ
    return {k.lower(): env[k] for k in _SLURM_VARS if env.get(k)}


def run_shard(
    plan: ShardPlan,
    paths: PlanPaths,
    index: int,
    *,
    visible: str | None,
    cancel: threading.Event,
    log: IO[str] | None = None,
) -> tuple[ShardStatus | None, int]:
    """Run one shard (see the module contract); returns ``(final status or None when busy, exit)``."""
    shard = plan.shards[index]
    with shard_lock(paths.lock(index)) as lock:
        if lock is None:
            _say(log, f"shard {index}: another worker holds {paths.lock(index)}; leaving it alone")
            return None, EXIT_BUSY
        name, uuid, how = identify(visible)
        status = ShardStatus(
            index=index,
            state="running",
            plan_id=plan.plan_id,
            host=host_name(),
            device=visible,
            gpu_name=name,
            gpu_uuid=uuid,
            started_at=time.time(),
            slurm=slurm_ids(),
            detail=f"GPU identity: {how}",
        )
        write_status(paths, status)
        writer = EventWriter(paths.progress(index))
        writer.emit(
            "shard_start",
            shard=index,
            host=status.host,
            device=visible,
            gpu_name=name,
            gpu_uuid=uuid,
            pid=os.getpid(),
            slurm=dict(status.slurm),
            plan_id=plan.plan_id,
        )
        _say(
            log,
            f"shard {index}/{len(plan.shards)} of plan {plan.plan_id} on {status.host}, "
            f"{'GPU ' + visible + ' ' + name + ' ' + uuid if visible is not None else 'no GPU pinned'}",
        )
        state, detail, roles = "complete", "", dict[str, Any]()
        try:
            state, detail, roles = _run_roles(plan, paths, index, shard.by_role, visible, cancel, writer, log)
        except Exception as exc:  # our bug or a bad plan: the shard fails, the manifest says why
            state, detail = "failed", f"{type(exc).__name__}: {exc}"
            _say(log, traceback.format_exc())
        final = dataclasses.replace(status, state=state, detail=detail, finished_at=time.time(), roles=roles)  # type: ignore[arg-type]
        write_status(paths, final)
        writer.emit("shard_finish", shard=index, state=state, detail=detail)
        writer.close()
        _say(log, f"shard {index}: {state}" + (f" ({detail})" if detail else ""))
        return final, EXIT_FOR_STATE[state]


def _run_roles(
    plan: ShardPlan,
    paths: PlanPaths,
    index: int,
    by_role: Any,
    visible: str | None,
    cancel: threading.Event,
    writer: EventWriter,
    log: IO[str] | None,
) -> tuple[str, str, dict[str, Any]]:
    out = paths.shard_out(index)
    roles: dict[str, Any] = {}
    problems: list[str] = []
    for rr in plan.roles:
        ids = tuple(by_role.get(rr.role, ()))
        if not ids:
            roles[rr.role] = {"backend": rr.backend, "planned": 0}
            continue
        if cancel.is_set():
            return "cancelled", f"cancelled before {rr.backend} started", roles
        spec = dataclasses.replace(
            rr.spec,
            env={**rr.spec.env, **pinned_env(visible)},
            extra_args=(
                *rr.spec.extra_args,
                "-p",
                SELECT_PLUGIN,
                "--workbench-only-ids",
                str(paths.ids_file(index, rr.role)),
            ),
        )

        def forward(ev: Event, role: str = rr.role, backend: str = rr.backend) -> None:
            if ev.event not in NOT_FORWARDED:
                writer.emit(
                    ev.event, ts=ev.ts, **{**ev.fields, "shard": index, "role": role, "backend": backend}
                )

        _say(log, f"shard {index}: {rr.backend} ({rr.role}), {len(ids)} planned id(s)")
        result = run(spec, out, on_event=forward, cancel=cancel)
        if result.cancelled or cancel.is_set():
            # Under SLURM the signal reaches the pytest child too (the whole job gets it), so the
            # runner may see a "killed" test rather than a cancel: either way the shard is cancelled.
            return "cancelled", f"{_CANCELLED_BY[0] or 'cancelled'} while {rr.backend} ran", roles
        seen = set(result.outcomes) | set(result.failed) | set(result.not_run)
        missing = [n for n in ids if n not in seen]
        if missing or not result.collected:
            problems.append(f"{rr.backend}: {len(missing)} planned id(s) not collected on {host_name()}")
            result = dataclasses.replace(
                result,
                not_run={
                    **result.not_run,
                    **{
                        n: f"not run: planned for shard {index} but not collected on {host_name()}"
                        for n in missing
                    },
                },
            )
        if result.collected or missing:
            write_results(result, spec, out)
        if result.not_run:
            problems.append(f"{rr.backend}: {len(result.not_run)} config(s) not run")
        if any(a.ended == "total_timeout" for a in result.attempts):
            problems.append(f"{rr.backend}: total timeout reached")
        roles[rr.role] = {
            "backend": rr.backend,
            "planned": len(ids),
            "rc": result.rc,
            "summary": result.summary_line(),
            "duration_s": round(result.duration_s, 3),
        }
        writer.emit(
            "shard_role_finish",
            shard=index,
            role=rr.role,
            backend=rr.backend,
            rc=result.rc,
            summary=result.summary_line(),
        )
        _say(log, f"shard {index}: {rr.backend}: {result.summary_line()}")
    if problems:
        return "incomplete", "; ".join(problems), roles
    return "complete", "", roles


def _say(log: IO[str] | None, text: str) -> None:
    if log is None:
        return
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    log.write("".join(f"[{stamp}] {line}\n" for line in text.rstrip("\n").splitlines()))
    log.flush()


_CANCELLED_BY: list[str] = [""]


def _install_cancel_handlers(cancel: threading.Event) -> None:
    def handler(signum: int, _frame: Any) -> None:
        if not _CANCELLED_BY[0]:
            _CANCELLED_BY[0] = (
                f"{signal.Signals(signum).name} received (scancel, a time limit, preemption or "
                "the local executor's cancel)"
            )
        cancel.set()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


def run_array_task(
    plan: ShardPlan, paths: PlanPaths, task: int, tasks_file: Path, cancel: threading.Event, log: IO[str]
) -> int:
    """One SLURM array task (see the module contract)."""
    try:
        tasks = json.loads(Path(tasks_file).read_text(encoding="utf-8"))["tasks"]
        mine = [int(i) for i in tasks[task]]
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        _say(log, f"array task {task}: cannot read its shard list from {tasks_file}: {exc}")
        return 2
    todo = [i for i in mine if not read_status(paths, i, plan.plan_id).done]
    _say(
        log,
        f"array task {task} on {host_name()}: shards {mine}, to run {todo}; "
        f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}",
    )
    if not todo:
        return 0
    visible = visible_gpus()
    if len(todo) == 1:
        _, code = run_shard(
            plan, paths, todo[0], visible=visible[0] if visible else None, cancel=cancel, log=log
        )
        return code
    from cutile_workbench.run.scaleout.devices import Device
    from cutile_workbench.run.scaleout.local import LocalExecutor

    devices = [Device(v) for v in visible] or [Device(None)]
    statuses = LocalExecutor(plan, paths, devices).run(todo, cancel=cancel)
    return max((EXIT_FOR_STATE.get(s.state, 2) for s in statuses.values()), default=0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m cutile_workbench.run.scaleout.worker", description=__doc__.split("\n")[0]
    )
    p.add_argument("--plan", required=True, type=Path)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--shard", type=int)
    which.add_argument("--array-task", type=int)
    p.add_argument("--tasks", type=Path, help="with --array-task: the submission's task → shards file")
    args = p.parse_args(argv)
    cancel = threading.Event()
    _install_cancel_handlers(cancel)
    log = sys.stdout
    try:
        plan = load_plan(args.plan)
    except WorkbenchError as exc:
        _say(log, f"error: {exc}")
        return 2
    paths = PlanPaths(root=args.plan.resolve().parent, kernel=plan.kernel)
    if args.shard is not None:
        if not 0 <= args.shard < len(plan.shards):
            _say(log, f"error: plan {plan.plan_id} has shards 0..{len(plan.shards) - 1}, not {args.shard}")
            return 2
        visible = visible_gpus()
        _, code = run_shard(
            plan, paths, args.shard, visible=visible[0] if visible else None, cancel=cancel, log=log
        )
        return code
    if args.tasks is None:
        _say(log, "error: --array-task needs --tasks FILE")
        return 2
    return run_array_task(plan, paths, args.array_task, args.tasks, cancel, log)


if __name__ == "__main__":
    sys.exit(main())
