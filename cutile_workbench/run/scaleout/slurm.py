"""SLURM execution: one ``sbatch --array`` job per submission, watched, merged by the caller, cancelled on request.

Contract:
- :class:`SlurmOptions`: ``nodes`` array tasks, each a one-node allocation (``--nodes=1
  --ntasks=1``, plus ``--gpus-per-node=G`` when ``gpus_per_node`` G > 0); the plan has
  ``nodes * max(1, G)`` shards, G per task, which the task runs on its own GPUs (worker
  ``--array-task``). ``partition``/``time``/``account`` map to the sbatch flags of the same name;
  each ``sbatch_args`` entry is split like a shell word list and appended last (it wins).
- :func:`require_slurm` raises :class:`SlurmUnavailable` (exit 2) naming every missing command
  (``sbatch``, ``squeue``, ``scancel``) before anything is planned or written.
- :func:`submit` writes ``slurm/job.sh`` (``exec``s the worker, so SLURM's signals reach it) and
  ``slurm/submit-<k>.json`` (task → shards), runs ``sbatch --parsable --array=0-<T-1>``, and records
  the job in ``slurm/jobs.json``. Per-task logs: ``slurm/<jobid>_<task>.out`` (stdout+stderr,
  appended across requeues). An sbatch refusal raises :class:`SlurmError` with sbatch's message.
- :func:`watch` polls ``squeue -r`` (one line per array task) every ``poll_s``, tails the shards'
  progress streams, and emits ``scaleout_task_state {task, shards, state, reason, nodes}`` on each
  change. A task that left the queue gets its final state from ``sacct`` (when accounting is on),
  else ``scontrol show job`` (while the controller still remembers it, ``MinJobAge``), else
  ``unknown``. Shard states come from the manifests; a shard whose task ended without a final
  manifest is ``failed`` with the SLURM state, exit code and task log named — after waiting up to
  ``manifest_grace_s`` for an NFS client to see the file. Losing the controller for longer than
  ``controller_grace_s`` raises :class:`SlurmError` and leaves the job running (a rerun re-attaches).
- Cancel (the ``cancel`` event: Ctrl-C, SIGTERM, SIGHUP of the CLI) and any error of ours while
  watching: ``scancel <jobid>`` (the whole array), then wait until squeue no longer lists it (up to
  ``cancel_wait_s``): no orphaned jobs. SLURM SIGTERMs the worker, which kills its pytest child.
- :func:`active_submission` returns the plan's last submission while squeue still lists one of its
  tasks, so a rerun watches that job instead of submitting a duplicate.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.errors import InputError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.run.scaleout.local import tail_lines
from cutile_workbench.run.scaleout.plan import PlanPaths, ShardPlan, ShardStatus, read_status
from cutile_workbench.run.scaleout.progress import OnEvent, TailSet, scaleout_event
from cutile_workbench.run.spec import PACKAGE_ROOT

#: squeue/sacct states after which a task will not run again by itself
FINAL_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)
_TIME = re.compile(r"^(?:\d+-)?\d{1,2}(?::\d{2}){0,2}$|^\d+$|^UNLIMITED$|^INFINITE$", re.IGNORECASE)


@dataclass
class SlurmUnavailable(InputError):
    title: str = "SLURM unavailable"


@dataclass
class SlurmError(InputError):
    title: str = "SLURM error"


@dataclass(frozen=True)
class SlurmOptions:
    nodes: int = 1
    gpus_per_node: int = 1
    partition: str | None = None
    time: str | None = None
    account: str | None = None
    sbatch_args: tuple[str, ...] = ()
    job_name: str | None = None
    poll_s: float = 5.0
    manifest_grace_s: float = 30.0
    controller_grace_s: float = 300.0
    cancel_wait_s: float = 120.0

    @property
    def shards_per_task(self) -> int:
        return max(1, self.gpus_per_node)

    @property
    def shards(self) -> int:
        return self.nodes * self.shards_per_task

    def validate(self) -> None:
        if not self.poll_s > 0:
            raise InputError(f"--poll must be positive, got {self.poll_s}", key="--poll")
        if self.nodes < 1:
            raise InputError(f"--nodes must be at least 1, got {self.nodes}", key="--nodes")
        if self.gpus_per_node < 0:
            raise InputError(
                f"--gpus-per-node must be 0 (CPU-only) or more, got {self.gpus_per_node}",
                key="--gpus-per-node",
            )
        if self.time is not None and not _TIME.match(self.time):
            raise InputError(
                f"--time {self.time!r} is not a SLURM time (minutes, MM:SS, HH:MM:SS or D-HH:MM:SS)",
                key="--time",
            )
        for arg in self.sbatch_args:
            try:
                shlex.split(arg)
            except ValueError as exc:
                raise InputError(f"--sbatch-arg {arg!r}: {exc}", key="--sbatch-arg") from None


@dataclass(frozen=True)
class Submission:
    job_id: str
    tasks: tuple[tuple[int, ...], ...]  # array task → shard indices
    tasks_file: Path
    submitted_at: float
    command: str

    def task_of(self, shard: int) -> int | None:
        for t, shards in enumerate(self.tasks):
            if shard in shards:
                return t
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "tasks": [list(t) for t in self.tasks],
            "tasks_file": str(self.tasks_file),
            "submitted_at": self.submitted_at,
            "command": self.command,
        }


@dataclass(frozen=True)
class TaskState:
    task: int
    state: str  # PENDING, RUNNING, COMPLETED, ... or "unknown"
    reason: str = ""
    nodes: str = ""
    exit_code: str = ""
    source: str = "squeue"


# --------------------------------------------------------------------------- commands


def require_slurm() -> dict[str, str]:
    found = {cmd: shutil.which(cmd) for cmd in ("sbatch", "squeue", "scancel")}
    missing = [c for c, p in found.items() if p is None]
    if missing:
        raise SlurmUnavailable(
            f"--slurm needs {', '.join(missing)} on PATH and none is here: run from a SLURM login node (or load "
            "its module), or use --gpus to shard over this node's GPUs",
            key="--slurm",
        )
    return {c: str(p) for c, p in found.items()}


def _run(argv: Sequence[str], timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    # Own session: a Ctrl-C on the terminal must not kill sbatch after it queued the job but before
    # it printed the id (that job would be orphaned); the watcher turns Ctrl-C into scancel instead.
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def sbatch_argv(
    opts: SlurmOptions, paths: PlanPaths, n_tasks: int, script: Path, tasks_file: Path, kernel: str
) -> list[str]:
    argv = [
        "sbatch",
        "--parsable",
        f"--array=0-{n_tasks - 1}",
        f"--job-name={opts.job_name or 'cutile-wb-' + kernel}",
        f"--output={paths.slurm_dir / '%A_%a.out'}",
        "--open-mode=append",
        f"--chdir={paths.root}",
        "--nodes=1",
        "--ntasks=1",
    ]
    if opts.gpus_per_node > 0:
        argv.append(f"--gpus-per-node={opts.gpus_per_node}")
    for flag, value in (("--partition", opts.partition), ("--time", opts.time), ("--account", opts.account)):
        if value:
            argv.append(f"{flag}={value}")
    for arg in opts.sbatch_args:
        argv.extend(shlex.split(arg))
    return [*argv, str(script), str(tasks_file)]


def batch_script(plan: ShardPlan, paths: PlanPaths, python: str) -> str:
    q = shlex.quote
    return (
        "#!/bin/bash\n"
        f"# cutile-workbench shard array task of plan {plan.plan_id} ({plan.kernel}); written by cutile_workbench.run.scaleout.slurm\n"
        "# $1: the submission's task -> shards file. The worker is exec'd so SLURM's signals reach it.\n"
        "set -u\n"
        f"export PYTHONPATH={q(str(PACKAGE_ROOT))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONUNBUFFERED=1\n"
        f"exec {q(python)} -m cutile_workbench.run.scaleout.worker --plan {q(str(paths.plan_json))} "
        '--array-task "$SLURM_ARRAY_TASK_ID" --tasks "$1"\n'
    )


def load_submissions(paths: PlanPaths) -> list[Submission]:
    path = paths.slurm_dir / "jobs.json"
    if not path.is_file():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return [
            Submission(
                job_id=str(d["job_id"]),
                tasks=tuple(tuple(int(i) for i in t) for t in d["tasks"]),
                tasks_file=Path(d["tasks_file"]),
                submitted_at=float(d["submitted_at"]),
                command=str(d.get("command", "")),
            )
            for d in doc["jobs"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"malformed submissions record ({exc})", path=path) from None


def submit(
    plan: ShardPlan,
    paths: PlanPaths,
    opts: SlurmOptions,
    shards: Sequence[int],
    *,
    python: str = sys.executable,
) -> Submission:
    """Submit one array job for ``shards`` (grouped ``shards_per_task`` per task); see the module contract."""
    require_slurm()
    paths.slurm_dir.mkdir(parents=True, exist_ok=True)
    previous = load_submissions(paths)
    script = paths.slurm_dir / "job.sh"
    atomic_write_bytes(script, batch_script(plan, paths, python).encode(), paths.root)
    script.chmod(0o755)
    per = opts.shards_per_task
    tasks = tuple(tuple(shards[i : i + per]) for i in range(0, len(shards), per))
    tasks_file = paths.slurm_dir / f"submit-{len(previous) + 1}.json"
    atomic_write_bytes(
        tasks_file, (json.dumps({"tasks": [list(t) for t in tasks]}) + "\n").encode(), paths.root
    )
    argv = sbatch_argv(opts, paths, len(tasks), script, tasks_file, plan.kernel)
    try:
        proc = _run(argv, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmError(f"sbatch did not run: {exc}", key="--slurm") from None
    if proc.returncode != 0:
        raise SlurmError(
            f"sbatch refused the job (exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()}\n"
            f"command: {shlex.join(argv)}",
            key="--slurm",
        )
    job_id = proc.stdout.strip().split(";")[0].strip()
    if not job_id.isdigit():
        raise SlurmError(f"sbatch --parsable printed {proc.stdout.strip()!r}, not a job id", key="--slurm")
    sub = Submission(
        job_id=job_id, tasks=tasks, tasks_file=tasks_file, submitted_at=time.time(), command=shlex.join(argv)
    )
    record = {"jobs": [s.to_json() for s in [*previous, sub]]}
    atomic_write_bytes(
        paths.slurm_dir / "jobs.json", (json.dumps(record, indent=1) + "\n").encode(), paths.root
    )
    return sub


def squeue_tasks(job_id: str) -> dict[int, TaskState] | None:
    """Array tasks squeue still lists (pending/running/completing); None when squeue itself failed."""
    try:
        proc = _run(["squeue", "-h", "-r", "-j", job_id, "-o", "%i|%K|%T|%r|%N"], timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        # a job the controller already purged is "Invalid job id": simply no longer queued
        return {} if "Invalid job id" in (proc.stderr + proc.stdout) else None
    out: dict[int, TaskState] = {}
    for line in proc.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 5 and parts[1].isdigit():
            out[int(parts[1])] = TaskState(int(parts[1]), parts[2], reason=parts[3], nodes=parts[4])
    return out


def final_task_states(job_id: str) -> dict[int, TaskState]:
    """Final states of a job's array tasks: sacct when accounting works, else scontrol."""
    try:
        proc = _run(
            ["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State,ExitCode,NodeList"], timeout=60
        )
        if proc.returncode == 0 and proc.stdout.strip():
            out: dict[int, TaskState] = {}
            for line in proc.stdout.splitlines():
                parts = line.split("|")
                m = re.match(rf"^{re.escape(job_id)}_(\d+)$", parts[0]) if parts else None
                if m and len(parts) >= 4:
                    state = parts[1].split()[0] if parts[1] else "unknown"
                    out[int(m.group(1))] = TaskState(
                        int(m.group(1)), state, nodes=parts[3], exit_code=parts[2], source="sacct"
                    )
            if out:
                return out
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        proc = _run(["scontrol", "-o", "show", "job", job_id], timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = {}
    if proc.returncode != 0:
        return out
    for line in proc.stdout.splitlines():
        kv = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        task = kv.get("ArrayTaskId", "")
        if kv.get("ArrayJobId") == job_id and task.isdigit():
            out[int(task)] = TaskState(
                int(task),
                kv.get("JobState", "unknown"),
                reason=kv.get("Reason", ""),
                nodes=kv.get("NodeList", ""),
                exit_code=kv.get("ExitCode", ""),
                source="scontrol",
            )
    return out


def scancel(job_id: str) -> str:
    try:
        proc = _run(["scancel", job_id], timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"scancel {job_id} failed: {exc}"
    return f"scancel {job_id}" + (
        f" (exit {proc.returncode}: {proc.stderr.strip()})" if proc.returncode else ""
    )


def active_submission(paths: PlanPaths) -> Submission | None:
    subs = load_submissions(paths)
    if not subs:
        return None
    last = subs[-1]
    queued = squeue_tasks(last.job_id)
    return last if queued else None


# --------------------------------------------------------------------------- watch


@dataclass
class _Watch:
    plan: ShardPlan
    paths: PlanPaths
    sub: Submission
    opts: SlurmOptions
    emit: OnEvent
    last: dict[int, TaskState] = field(default_factory=dict)
    ended_at: dict[int, float] = field(default_factory=dict)

    def report(self, st: TaskState) -> None:
        prev = self.last.get(st.task)
        if prev is None or (prev.state, prev.reason, prev.nodes) != (st.state, st.reason, st.nodes):
            self.emit(
                scaleout_event(
                    "scaleout_task_state",
                    job_id=self.sub.job_id,
                    task=st.task,
                    shards=list(self.sub.tasks[st.task]),
                    state=st.state,
                    reason=st.reason,
                    nodes=st.nodes,
                    exit_code=st.exit_code,
                    source=st.source,
                )
            )
        self.last[st.task] = st


def watch(
    plan: ShardPlan,
    paths: PlanPaths,
    sub: Submission,
    opts: SlurmOptions,
    *,
    on_event: OnEvent | None = None,
    cancel: threading.Event | None = None,
) -> dict[int, ShardStatus]:
    """Follow one submission to its end (see the module contract); returns its shards' statuses."""
    emit = on_event or (lambda _ev: None)
    shards = [i for t in sub.tasks for i in t]
    tails = TailSet({i: paths.progress(i) for i in shards}, on_event)
    w = _Watch(plan, paths, sub, opts, emit)
    pending_tasks = set(range(len(sub.tasks)))
    lost_since: float | None = None
    try:
        while pending_tasks:
            if cancel is not None and cancel.is_set():
                _cancel(sub, opts, emit)
                break
            queued = squeue_tasks(sub.job_id)
            tails.poll()
            now = time.monotonic()
            if queued is None:
                lost_since = lost_since or now
                if now - lost_since > opts.controller_grace_s:
                    raise SlurmError(
                        f"squeue has failed for {opts.controller_grace_s:.0f}s; job {sub.job_id} is left "
                        "running: rerun the same command to re-attach",
                        key="--slurm",
                    )
                time.sleep(opts.poll_s)
                continue
            lost_since = None
            for st in queued.values():
                w.report(st)
            gone = [t for t in pending_tasks if t not in queued]
            if gone:
                finals = final_task_states(sub.job_id)
                for t in gone:
                    w.ended_at.setdefault(t, now)
                    if (
                        all(
                            read_status(paths, i, plan.plan_id).state not in ("pending", "running")
                            for i in sub.tasks[t]
                        )
                        or now - w.ended_at[t] > opts.manifest_grace_s
                    ):
                        w.report(
                            finals.get(t, TaskState(t, "unknown", source="not in squeue, sacct or scontrol"))
                        )
                        pending_tasks.discard(t)
            if pending_tasks:
                time.sleep(opts.poll_s)
    except BaseException as exc:
        if not isinstance(exc, SlurmError):
            _cancel(
                sub, opts, emit
            )  # Ctrl-C in the main thread, or a bug of ours: never leave the job behind
        raise
    tails.poll()
    unsettled = [
        t for t in range(len(sub.tasks)) if w.last.get(t) is None or w.last[t].state not in FINAL_STATES
    ]
    if unsettled:
        finals = final_task_states(sub.job_id)
        for t in unsettled:
            if t in finals:
                w.report(finals[t])
    out: dict[int, ShardStatus] = {}
    for i in shards:
        task = sub.task_of(i)
        out[i] = _shard_outcome(plan, paths, sub, i, w.last.get(task) if task is not None else None)
    return out


def _cancel(sub: Submission, opts: SlurmOptions, emit: OnEvent) -> None:
    how = scancel(sub.job_id)
    emit(scaleout_event("scaleout_cancel", job_id=sub.job_id, detail=how))
    deadline = time.monotonic() + opts.cancel_wait_s
    while time.monotonic() < deadline:
        queued = squeue_tasks(sub.job_id)
        if queued is not None and not queued:
            emit(
                scaleout_event(
                    "scaleout_cancelled", job_id=sub.job_id, detail="squeue no longer lists the job"
                )
            )
            return
        time.sleep(min(1.0, opts.poll_s))
    emit(
        scaleout_event(
            "scaleout_cancelled",
            job_id=sub.job_id,
            detail=f"still listed by squeue after {opts.cancel_wait_s:.0f}s (scancel was sent)",
        )
    )


def _shard_outcome(
    plan: ShardPlan, paths: PlanPaths, sub: Submission, index: int, task: TaskState | None
) -> ShardStatus:
    status = read_status(paths, index, plan.plan_id)
    if status.state not in ("pending", "running"):
        return status
    t = sub.task_of(index)
    log = paths.slurm_dir / f"{sub.job_id}_{t}.out"
    state = task.state if task else "unknown"
    why = {
        "TIMEOUT": "the time limit (--time) was reached",
        "CANCELLED": "the task was cancelled (scancel)",
        "OUT_OF_MEMORY": "the task ran out of memory",
        "NODE_FAIL": "its node failed",
        "PREEMPTED": "the task was preempted",
    }.get(state.split()[0] if state else "", "")
    detail = (
        f"array task {sub.job_id}_{t} ended ({state}{', exit ' + task.exit_code if task and task.exit_code else ''}"
        f"{'; ' + why if why else ''}) without a final shard manifest"
    )
    if state == "COMPLETED" or not why:
        detail += (
            f"; if the task log {log} shows the worker finishing, the out root is probably not on a "
            "filesystem the compute nodes share"
        )
    last = tail_lines(log)
    if last:
        detail += f"; task log tail:\n{last}"
    final_state = "cancelled" if state.startswith("CANCELLED") or state == "TIMEOUT" else "failed"
    return dataclasses.replace(status, state=final_state, detail=detail)  # type: ignore[arg-type]


def task_summary(states: Mapping[int, TaskState]) -> str:
    counts: dict[str, int] = {}
    for st in states.values():
        counts[st.state] = counts.get(st.state, 0) + 1
    return ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
