"""Scale-out service: plan → resume → execute (this node's GPUs, or SLURM) → merge, with one event stream.

Contract of :func:`run_scaled` (``ScaleoutRequest`` in, ``ScaleoutResult`` out):
- Plans as :mod:`cutile_workbench.run.scaleout.plan` says (collection here, rows kept together, contiguous
  balanced shards): ``len(devices)`` shards locally, ``nodes * max(1, gpus_per_node)`` on SLURM.
- **Resume**: shards whose manifest says ``complete`` are kept and not run again. Exceptions: a plan
  that was already merged is a finished run, so running it again re-measures every shard (a kernel
  edited since must never be reported with old numbers); ``fresh=True`` does the same for an
  unmerged plan. A SLURM job of this plan that squeue still lists is re-attached (watched), never
  submitted twice; ``fresh`` while it runs is refused.
- Executes the pending shards (:class:`~cutile_workbench.run.scaleout.local.LocalExecutor` or
  :func:`~cutile_workbench.run.scaleout.slurm.submit` + :func:`~cutile_workbench.run.scaleout.slurm.watch`), then merges
  (:func:`~cutile_workbench.run.scaleout.merge.merge_plan`) only when **every** shard is complete; otherwise
  nothing is merged (as a cancelled single run writes nothing) and the result names the shards a
  rerun will run.
- Events, handed to ``on_event`` in order from the calling thread (``Event`` objects, as the
  runner's ``on_event``): ``scaleout_plan {plan_id, mode, kernel, configs, rows, shards: [{index,
  configs, rows, state}], resumed, fresh, warnings, plan_dir}``, ``scaleout_submit {job_id, tasks,
  command, logs}`` / ``scaleout_attach {job_id}``, ``scaleout_task_state``, ``scaleout_shard_state``,
  the workers' own events (``shard_start``, ``collected``, ``test_start``, ``record``,
  ``test_finish``, ``runner_*``, ``shard_role_finish``, ``shard_finish``; each with ``shard``,
  ``role``, ``backend``), ``scaleout_cancel``/``scaleout_cancelled``, ``scaleout_merge
  {kernel_dir, written, mixed_gpu_rows, gpu_models, unknown_gpu_rows, notes}``,
  ``scaleout_finish {rc, complete, not_complete}``. A face folds them with
  :class:`~cutile_workbench.run.scaleout.progress.ProgressBoard` (per-shard counters, no I/O).
- ``cancel`` (Ctrl-C): running shards are cancelled (local: SIGTERM to the workers; SLURM:
  ``scancel`` of the array), nothing is merged. ``ScaleoutResult.rc``: 0 merged, every config passed
  or skipped; 1 merged with failed/not-run configs, or shards not complete (rerun to resume);
  2 cancelled.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Literal

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.run.scaleout.devices import Device
from cutile_workbench.run.scaleout.local import LocalExecutor, lock_holder
from cutile_workbench.run.scaleout.merge import MergeResult, merge_plan
from cutile_workbench.run.scaleout.plan import (
    PlanPaths,
    RoleRun,
    ShardPlan,
    ShardStatus,
    collect_roles,
    host_name,
    plan_shards,
    read_status,
    reset_shard,
    save_plan,
)
from cutile_workbench.run.scaleout.progress import OnEvent, scaleout_event
from cutile_workbench.run.scaleout.slurm import SlurmOptions, active_submission, require_slurm, submit, watch

Mode = Literal["local", "slurm"]


@dataclass(frozen=True)
class ScaleoutRequest:
    kernel: str
    out: KernelPaths
    roles: tuple[RoleRun, ...]
    mode: Mode
    devices: tuple[Device, ...] = ()  # local: one shard per slot
    slurm: SlurmOptions | None = None
    fresh: bool = False
    merge: bool = True

    @property
    def n_shards(self) -> int:
        if self.mode == "local":
            return len(self.devices)
        return (self.slurm or SlurmOptions()).shards


@dataclass(frozen=True)
class ScaleoutResult:
    plan: ShardPlan
    paths: PlanPaths
    statuses: dict[int, ShardStatus]
    merged: MergeResult | None = None
    cancelled: bool = False
    job_ids: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def not_complete(self) -> list[int]:
        return [i for i, s in sorted(self.statuses.items()) if not s.done]

    @property
    def rc(self) -> int:
        if self.cancelled:
            return 2
        if self.merged is None or self.not_complete:
            return 1
        return 1 if any(r.failed or r.not_run for r in self.merged.results.values()) else 0


def _emit(on_event: OnEvent | None, kind: str, **fields: object) -> None:
    if on_event is not None:
        on_event(scaleout_event(kind, **fields))


def plan_request(req: ScaleoutRequest, *, cancel: threading.Event | None = None) -> ShardPlan:
    """Collect and plan (no shard runs); raises InputError/Cancelled."""
    if req.n_shards < 1:
        raise InputError("no shard slot: --gpus selected no GPU", key="--gpus")
    collected = collect_roles(req.roles, cancel=cancel)
    return plan_shards(req.kernel, req.roles, collected, req.n_shards, host=host_name())


def run_scaled(
    req: ScaleoutRequest, *, on_event: OnEvent | None = None, cancel: threading.Event | None = None
) -> ScaleoutResult:
    """See the module contract."""
    if req.mode == "slurm":
        (req.slurm or SlurmOptions()).validate()
        require_slurm()
    plan = plan_request(req, cancel=cancel)
    paths = PlanPaths.for_plan(req.out, plan.plan_id)
    save_plan(plan, paths)
    attached = active_submission(paths) if req.mode == "slurm" else None
    merged_before = (paths.root / "merged.json").is_file()
    warnings: list[str] = []
    if (req.fresh or merged_before) and attached is None:
        _start_over(plan, paths)
    elif req.fresh and attached is not None:
        raise InputError(
            f"job {attached.job_id} of plan {plan.plan_id} is still queued or running: wait for it or "
            f"`scancel {attached.job_id}` before --fresh",
            key="--fresh",
        )
    statuses = {s.index: read_status(paths, s.index, plan.plan_id) for s in plan.shards}
    resumed = [i for i, s in statuses.items() if s.done]
    if req.mode == "local" and any(d.shared for d in req.devices):
        warnings.append(
            "several shards share one GPU: their timings interfere (use this only to test the "
            "plumbing or to measure the scale-out overhead)"
        )
    if len(plan.shards) < req.n_shards:
        warnings.append(f"{plan.rows} row(s) fill only {len(plan.shards)} of {req.n_shards} shard(s)")
    _emit(
        on_event,
        "scaleout_plan",
        plan_id=plan.plan_id,
        mode=req.mode,
        kernel=plan.kernel,
        configs=plan.configs,
        rows=plan.rows,
        plan_dir=str(paths.root),
        resumed=resumed,
        fresh=req.fresh or merged_before,
        warnings=warnings,
        shards=[
            {"index": s.index, "configs": len(s.nodeids), "rows": s.rows, "state": statuses[s.index].state}
            for s in plan.shards
        ],
    )
    pending = [i for i, s in sorted(statuses.items()) if not s.done]
    job_ids: list[str] = []
    cancelled = False
    if req.mode == "local" and pending:
        statuses.update(
            LocalExecutor(plan, paths, req.devices).run(pending, on_event=on_event, cancel=cancel)
        )
    elif req.mode == "slurm" and (pending or attached is not None):
        opts = req.slurm or SlurmOptions()
        if attached is not None:
            sub = attached
            _emit(on_event, "scaleout_attach", job_id=sub.job_id, tasks=[list(t) for t in sub.tasks])
        else:
            _reset_pending(plan, paths, pending)  # a failed attempt's files must not be read as the new one's
            sub = submit(plan, paths, opts, pending)
            _emit(
                on_event,
                "scaleout_submit",
                job_id=sub.job_id,
                tasks=[list(t) for t in sub.tasks],
                command=sub.command,
                logs=str(paths.slurm_dir / f"{sub.job_id}_<task>.out"),
            )
        job_ids.append(sub.job_id)
        statuses.update(watch(plan, paths, sub, opts, on_event=on_event, cancel=cancel))
    cancelled = bool(cancel is not None and cancel.is_set())
    merged: MergeResult | None = None
    if not cancelled and req.merge and all(s.done for s in statuses.values()):
        merged = merge_plan(plan, paths, req.out, mode=req.mode, statuses=statuses, job_ids=job_ids)
        _emit(
            on_event,
            "scaleout_merge",
            plan_id=plan.plan_id,
            kernel_dir=str(req.out.root),
            written=[str(p) for p in merged.written],
            mixed_gpu_rows=[r.describe() for r in merged.mixed.rows],
            gpu_models=list(merged.mixed.models),
            unknown_gpu_rows=merged.mixed.unknown,
            notes=list(merged.notes),
        )
    result = ScaleoutResult(
        plan=plan,
        paths=paths,
        statuses=statuses,
        merged=merged,
        cancelled=cancelled,
        job_ids=tuple(job_ids),
        notes=tuple(warnings),
    )
    _emit(
        on_event,
        "scaleout_finish",
        plan_id=plan.plan_id,
        rc=result.rc,
        cancelled=cancelled,
        complete=[i for i, s in statuses.items() if s.done],
        not_complete=result.not_complete,
    )
    return result


def _reset_pending(plan: ShardPlan, paths: PlanPaths, shards: list[int]) -> None:
    busy = [f"{i} ({holder})" for i in shards if (holder := lock_holder(paths.lock(i)))]
    if busy:
        raise InputError(
            f"shard(s) {', '.join(busy)} of plan {plan.plan_id} are being run by another process now",
            path=paths.root,
        )
    for i in shards:
        reset_shard(paths, i)


def _start_over(plan: ShardPlan, paths: PlanPaths) -> None:
    _reset_pending(plan, paths, [s.index for s in plan.shards])
    (paths.root / "merged.json").unlink(missing_ok=True)
