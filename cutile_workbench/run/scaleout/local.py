"""Local executor: shards over this node's GPUs, one shard worker process per GPU slot.

Why the runner's own children and not pytest-xdist: each worker is a
:mod:`cutile_workbench.run.scaleout.worker` process that runs :func:`cutile_workbench.run.runner.run` on its shard, so
every per-config guarantee of a single run holds per GPU unchanged — the hang watchdog, crash and
sticky-CUDA-error restarts, resume by explicit node ids, raw logs that TileGym's validators read.
xdist gives none of that per worker (no per-test hang kill for a kernel stuck in C; a poisoned CUDA
context would make the runner restart the whole xdist session, on every GPU), its load scheduler
can send a config's candidate and baseline to different GPUs (a ratio across two GPUs), pinning a
worker to a GPU needs ``--tx popen//env:…`` per GPU, and with ``-s`` the workers' own output (the
lines the perf logs must keep) never reaches the controller's log. The same worker is also what a
SLURM array task runs, so there is one shard code path on a laptop, a node and a cluster.

Contract of :meth:`LocalExecutor.run`:
- A queue of shards over the device slots; a slot runs one worker at a time
  (``python -m cutile_workbench.run.scaleout.worker --plan P --shard I`` in its own session, pinned with
  :func:`~cutile_workbench.run.scaleout.devices.pinned_env`, stdout+stderr appended to the shard's
  ``worker.log``). A shard another process holds (its lock is taken) is left alone and reported
  ``failed`` ("busy"); otherwise its previous attempt is removed first (:func:`reset_shard`).
- Progress: every ``poll_s`` the running shards' ``progress.jsonl`` are tailed and each event goes
  to ``on_event`` in order (from the calling thread), with ``scaleout_shard_state {shard, state,
  device, gpu, host, detail}`` events when a shard starts and ends.
- Isolation: a worker that dies without writing its final manifest (SIGKILL, out of memory, a bug
  of ours) fails only its shard, with its exit status and the last lines of ``worker.log``; the
  other slots go on. Its pytest child, which runs in a session of its own and would keep the GPU
  busy, is killed too: its pid is the last ``session_start`` of that shard's progress stream, and
  it is killed only while ``/proc/<pid>/cmdline`` still names the shard's directory (pid reuse).
- ``cancel``: SIGTERM to every running worker's process group (the worker cancels its runner,
  which kills the pytest child's group), SIGKILL after ``kill_grace_s``; shards not started stay
  ``pending``. Returns ``{shard: ShardStatus}`` for every shard it was given.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cutile_workbench.artifacts.events import Event
from cutile_workbench.proc.group import kill_groups
from cutile_workbench.run.scaleout.devices import Device, pinned_env
from cutile_workbench.run.scaleout.plan import PlanPaths, ShardPlan, ShardStatus, read_status, reset_shard
from cutile_workbench.run.scaleout.progress import OnEvent, TailSet, scaleout_event
from cutile_workbench.run.spec import PACKAGE_ROOT


def worker_env(device: Device, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment of a worker: ours, our package first on PYTHONPATH, pinned to ``device``."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT), *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONUNBUFFERED"] = "1"
    if device.visible is None:
        env.pop("CUDA_VISIBLE_DEVICES", None)
    env.update(pinned_env(device.visible))
    return env


def lock_holder(path: Path) -> str | None:
    """Who holds a shard lock (its ``host pid N`` line), or None when it is free."""
    import fcntl

    if not path.exists():
        return None
    with open(path, "a+", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            return fh.read().strip() or "another process"
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return None


def tail_lines(path: Path, n: int = 8) -> str:
    try:
        data = path.read_bytes()[-8192:]
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").strip().splitlines()[-n:])


@dataclass
class _Running:
    shard: int
    slot: int
    proc: subprocess.Popen[bytes]
    started: float


def reap_orphan(pid: int, shard_dir: Path) -> bool:
    """SIGKILL the process group of a pytest child whose worker died; True when one was killed."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    if str(shard_dir) + os.sep not in cmdline:
        return False  # the pid was reused by an unrelated process
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
        return True
    return False


@dataclass
class LocalExecutor:
    plan: ShardPlan
    paths: PlanPaths
    devices: Sequence[Device]
    python: str = sys.executable
    poll_s: float = 0.2
    kill_grace_s: float = 15.0
    _child_pid: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def run(
        self, shards: Sequence[int], *, on_event: OnEvent | None = None, cancel: threading.Event | None = None
    ) -> dict[int, ShardStatus]:
        if not self.devices:
            raise ValueError("LocalExecutor needs at least one device slot")
        queue = list(shards)
        results: dict[int, ShardStatus] = {}
        running: dict[int, _Running] = {}  # slot → worker
        self._child_pid: dict[int, int] = {}

        def seen(ev: Event) -> None:
            pid = ev.get("pid")
            if ev.event == "session_start" and isinstance(ev.get("shard"), int) and isinstance(pid, int):
                self._child_pid[ev["shard"]] = pid
            if on_event is not None:
                on_event(ev)

        tails = TailSet({i: self.paths.progress(i) for i in shards}, seen)
        emit = on_event or (lambda _ev: None)
        try:
            while queue or running:
                if cancel is not None and cancel.is_set():
                    self._stop_all(running, tails, results, emit)
                    break
                for slot in range(len(self.devices)):
                    if slot in running or not queue:
                        continue
                    index = queue.pop(0)
                    started = self._start(index, slot, emit)
                    if isinstance(started, ShardStatus):
                        results[index] = started
                    else:
                        running[slot] = started
                tails.poll([r.shard for r in running.values()])
                for slot, r in list(running.items()):
                    if r.proc.poll() is not None:
                        del running[slot]
                        results[r.shard] = self._finished(r, tails, emit)
                time.sleep(self.poll_s)
        except BaseException:
            self._stop_all(running, tails, results, emit)
            raise
        for index in shards:
            results.setdefault(index, read_status(self.paths, index, self.plan.plan_id))
        return results

    def _start(self, index: int, slot: int, emit: OnEvent) -> _Running | ShardStatus:
        device = self.devices[slot]
        holder = lock_holder(self.paths.lock(index))
        if holder is not None:
            status = ShardStatus(
                index=index,
                state="failed",
                plan_id=self.plan.plan_id,
                detail=f"busy: shard {index} is being run by {holder}",
            )
            emit(scaleout_event("scaleout_shard_state", shard=index, state="failed", detail=status.detail))
            return status
        reset_shard(self.paths, index)
        log_path = self.paths.worker_log(index)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            self.python,
            "-m",
            "cutile_workbench.run.scaleout.worker",
            "--plan",
            str(self.paths.plan_json),
            "--shard",
            str(index),
        ]
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                argv,
                env=worker_env(device),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=self.paths.root,
            )
        emit(
            scaleout_event(
                "scaleout_shard_state",
                shard=index,
                state="running",
                device=device.visible,
                gpu=device.name,
                slot=slot,
                shared_device=device.shared,
                pid=proc.pid,
                log=str(log_path),
            )
        )
        return _Running(shard=index, slot=slot, proc=proc, started=time.monotonic())

    def _finished(self, r: _Running, tails: TailSet, emit: OnEvent, cancelled: bool = False) -> ShardStatus:
        tails.poll([r.shard])
        status = read_status(self.paths, r.shard, self.plan.plan_id)
        rc = r.proc.returncode
        if status.state in ("running", "pending"):
            how = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exited with status {rc}"
            last = tail_lines(self.paths.worker_log(r.shard))
            pid = self._child_pid.get(r.shard)
            reaped = pid is not None and reap_orphan(pid, self.paths.shard_dir(r.shard))
            status = replace(
                status,
                state="cancelled" if cancelled else "failed",
                finished_at=time.time(),
                detail=f"worker {how} without a final manifest"
                + (f"; its pytest child (pid {pid}) was killed" if reaped else "")
                + (f"; last output:\n{last}" if last else ""),
            )
        emit(
            scaleout_event(
                "scaleout_shard_state",
                shard=r.shard,
                state=status.state,
                host=status.host,
                gpu=status.gpu_name,
                device=status.device,
                detail=status.detail,
                rc=rc,
                duration_s=round(time.monotonic() - r.started, 3),
            )
        )
        return status

    def _stop_all(
        self, running: dict[int, _Running], tails: TailSet, results: dict[int, ShardStatus], emit: OnEvent
    ) -> None:
        kill_groups([r.proc for r in running.values()], self.kill_grace_s)  # one shared grace period
        for r in running.values():
            results[r.shard] = self._finished(r, tails, emit, cancelled=True)
        running.clear()
