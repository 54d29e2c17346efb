"""Merge a plan's complete shards into the kernel's TileGym layout, with per-row provenance.

Contract of :func:`merge_plan` (refuses, writing nothing, unless every shard is ``complete``):
- Per role, one merged :class:`~cutile_workbench.run.spec.RunResult` is laid into the kernel dir by
  :func:`cutile_workbench.run.results.write_results` — the same atomic, locked, role-replacing write as a
  single run — so every reader (E's table, ``report e``, the TUI) sees one ordinary run:
  - raw log: the shards' raw logs concatenated in shard order, each after one banner
    ``===== workbench shard K/N (plan P): M node id(s) on host H, GPU D NAME UUID =====``, then one
    ``===== workbench summary: … in N shard(s) … =====`` line. Banners and the summary contain no
    ``PASSED``/``FAILED``/``SKIPPED``/``Performance Test Results`` (they are lowered if a host or GPU
    name would), so ``validate_perf_log.sh`` counts exactly the shards' lines: the merged log of
    clean shards passes it as a single run's does, with the same counts. Shards are contiguous in
    collection order (:mod:`~cutile_workbench.run.scaleout.plan`), so records appear in single-run order.
  - events: the shards' events of that role, in shard order, each with ``shard``, ``host``,
    ``gpu_name``, ``gpu_uuid``; launch sets: the union (one config, one shard); outcomes,
    failures and not-run reasons: the union; attempts: every shard's, in order.
  - ``session.json`` ``runs[role]`` (through ``write_results``' ``metadata_overrides`` hook): the
    shards' hosts, GPU models and compute capability (None when they differ) instead of the merging
    host's, ``measured_on`` (per node id: shard, host, GPU name/UUID, device, ``gpu_source``) and
    ``scaleout`` (plan id, mode, shards with host, GPU, device, SLURM ids, duration).
  - Which GPU measured a shard's rows: the pytest child's own NVML identity (its ``provenance``
    events, :mod:`cutile_workbench.history.provenance`; torch's CUDA device at session finish) where it has one,
    else the worker's nvidia-smi identity of the GPU it was pinned to; ``gpu_source`` says which,
    and a child whose GPU is not the one its worker was pinned to is named in the notes.
- Afterwards :func:`~cutile_workbench.run.scaleout.provenance.mixed_gpu_rows` runs over the merged
  ``session.json`` (other roles from earlier single runs included) and the result lists rows whose
  candidate and baseline were measured on different GPU models; ``merged.json`` in the plan dir
  records what was merged when. Merging again is idempotent.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.events import Event, read_events
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.perflog.printer import MARKER
from cutile_workbench.errors import InputError
from cutile_workbench.history.provenance import provenance_from_events
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.model import LaunchSet
from cutile_workbench.run.results import raw_log_destination, write_results
from cutile_workbench.run.scaleout.devices import UNKNOWN
from cutile_workbench.run.scaleout.plan import PlanPaths, RoleRun, ShardPlan, ShardStatus, read_status
from cutile_workbench.run.scaleout.provenance import MixedGpuReport, gpu_model, mixed_gpu_rows
from cutile_workbench.run.spec import Attempt, RunResult

_COUNTED = (MARKER, "PASSED", "FAILED", "SKIPPED")


@dataclass(frozen=True)
class MergeResult:
    plan_id: str
    written: tuple[Path, ...]
    results: Mapping[str, RunResult]  # role → merged result
    mixed: MixedGpuReport
    notes: tuple[str, ...] = field(default_factory=tuple)


def _safe(text: str) -> str:
    for word in _COUNTED:
        text = text.replace(word, word.lower())
    return text


def shard_banner(status: ShardStatus, n_shards: int, plan_id: str, n_ids: int) -> str:
    gpu = (
        f"GPU {status.device} {status.gpu_name} {status.gpu_uuid}"
        if status.device is not None
        else "no GPU pinned"
    )
    return _safe(
        f"===== workbench shard {status.index + 1}/{n_shards} (plan {plan_id}): {n_ids} node id(s) "
        f"on host {status.host or 'unknown'}, {gpu} ====="
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read shard metadata: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("shard metadata must be a JSON object", path=path)
    return data


@dataclass
class _RoleParts:
    """One role's pieces, gathered shard by shard."""

    log_pieces: list[tuple[str, Path]] = field(
        default_factory=list
    )  # (banner, shard raw log), streamed later
    events: list[Event] = field(default_factory=list)
    collected: list[str] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    launch_sets: list[LaunchSet] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    measured_on: dict[str, dict[str, Any]] = field(default_factory=dict)
    shards: list[dict[str, Any]] = field(default_factory=list)
    rcs: list[int] = field(default_factory=list)


def _gather(
    rr: RoleRun, plan: ShardPlan, paths: PlanPaths, statuses: Mapping[int, ShardStatus]
) -> _RoleParts:
    parts = _RoleParts()
    n = len(plan.shards)
    for shard in plan.shards:
        ids = shard.by_role.get(rr.role, ())
        if not ids:
            continue
        st = statuses[shard.index]
        sout = paths.shard_out(shard.index)
        runs = _read_json(sout.session_json).get("runs")
        meta = runs.get(rr.role) if isinstance(runs, dict) else None
        if not isinstance(meta, dict):
            raise InputError(
                f"shard {shard.index} has no {rr.role} results", path=sout.session_json, key="runs"
            )
        log_path = raw_log_destination(rr.role, sout)
        if not log_path.is_file():
            raise InputError("shard raw log is missing", path=log_path)
        parts.log_pieces.append((shard_banner(st, n, plan.plan_id, len(ids)), log_path))
        role_events = (
            [ev for ev in read_events(sout.events_jsonl) if ev.get("role") == rr.role]
            if sout.events_jsonl.is_file()
            else []
        )
        name, uuid, source, note = _measuring_gpu(st, role_events, rr.backend)
        if note:
            parts.notes.append(note)
        where = {"shard": shard.index, "host": st.host, "gpu_name": name, "gpu_uuid": uuid}
        parts.events.extend(Event(ev.event, ev.ts, {**ev.fields, **where}) for ev in role_events)
        parts.collected.extend(ids)
        for key, target in (
            ("outcomes", parts.outcomes),
            ("failed", parts.failed),
            ("not_run", parts.not_run),
        ):
            value = meta.get(key)
            if isinstance(value, dict):
                target.update({str(k): str(v) for k, v in value.items()})
        raw_cmds = meta.get("commands")
        commands: list[str] = [str(c) for c in raw_cmds] if isinstance(raw_cmds, list) else []
        for i, a in enumerate(meta.get("attempts") or []):
            if not isinstance(a, dict):
                continue
            argv = tuple(shlex.split(commands[i])) if i < len(commands) else ()
            parts.attempts.append(
                Attempt(
                    index=len(parts.attempts) + 1,
                    argv=argv,
                    rc=a.get("rc"),
                    ended=str(a.get("ended", "")),
                    detail=f"shard {shard.index} attempt {a.get('index')}: {a.get('detail', '')}",
                    duration_s=float(a.get("duration_s") or 0.0),
                    events_path=str(sout.workbench_dir / "runs"),
                )
            )
        parts.notes.extend(f"shard {shard.index}: {note}" for note in meta.get("notes") or [])
        parts.rcs.append(int(meta.get("rc", 1)))
        if sout.launches_json.is_file():
            from cutile_workbench.artifacts.launch_store import open_store

            wanted = set(ids)
            store = open_store(sout.launches_json)  # a shard's other sets are not decoded
            parts.launch_sets.extend(store[i] for i, e in enumerate(store.entries) if e.nodeid in wanted)
        for nodeid in ids:
            parts.measured_on[nodeid] = {**where, "device": st.device, "gpu_source": source}
        parts.shards.append(
            {
                "index": shard.index,
                "host": st.host,
                "device": st.device,
                "gpu_name": name,
                "gpu_uuid": uuid,
                "gpu_source": source,
                "slurm": dict(st.slurm),
                "node_ids": len(ids),
                "compute_capability": meta.get("compute_capability"),
                "rc": meta.get("rc"),
                "duration_s": meta.get("duration_s"),
                "compile_cache": meta.get("compile_cache"),
                "started_at": st.started_at,
                "finished_at": st.finished_at,
            }
        )
    return parts


def _measuring_gpu(st: ShardStatus, role_events: Sequence[Event], backend: str) -> tuple[str, str, str, str]:
    """``(name, uuid, source, note)`` of the GPU a shard's role was measured on: the pytest child's own
    NVML identity (its ``provenance`` events: torch's CUDA device at session finish) when it has one,
    else the worker's nvidia-smi identity of the GPU it was pinned to (the manifest)."""
    worker = (st.gpu_name, st.gpu_uuid, "nvidia-smi (the shard worker)")
    try:
        prov = provenance_from_events(role_events, source=f"shard {st.index} events")
    except InputError as exc:
        return (
            *worker,
            f"shard {st.index} {backend}: unreadable provenance ({exc.message}); GPU from nvidia-smi",
        )
    gpu = prov.gpu if prov is not None else None
    if gpu is None or not gpu.name:
        return (*worker, "")
    child = (gpu.name, gpu.uuid or UNKNOWN, f"NVML in the pytest child ({gpu.selected_by})")
    if UNKNOWN not in (st.gpu_uuid, child[1]) and st.gpu_uuid != child[1]:
        return (
            *child,
            f"shard {st.index} {backend}: measured on {child[1]} ({child[0]}, NVML in the pytest child) "
            f"although its worker was pinned to {st.gpu_uuid}; the rows name the child's GPU",
        )
    return (*child, "")


def write_concatenated(dest: Path, pieces: Sequence[tuple[str, Path]], last_line: str) -> None:
    """``banner\\nlog`` per piece, then ``last_line``, streamed into ``dest`` (temp file + rename):
    shard raw logs can be hundreds of MiB each, so nothing is held in memory."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as out:
            ends_with_newline = True
            for banner, path in pieces:
                if not ends_with_newline:
                    out.write(b"\n")
                out.write(banner.encode() + b"\n")
                try:
                    with open(path, "rb") as src:
                        shutil.copyfileobj(src, out, 1 << 20)
                except OSError as exc:
                    raise InputError(f"cannot read shard raw log: {exc.strerror or exc}", path=path) from None
                ends_with_newline = path.stat().st_size == 0 or _last_byte(path) == b"\n"
            if not ends_with_newline:
                out.write(b"\n")
            out.write(last_line.encode() + b"\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1)


def _summary(parts: _RoleParts, wall_s: float) -> str:
    passed = sum(1 for o in parts.outcomes.values() if o == "passed")
    skipped = sum(1 for o in parts.outcomes.values() if o == "skipped")
    return (
        f"===== workbench summary: {passed} passed, {len(parts.failed)} failed, {skipped} skipped, "
        f"{len(parts.not_run)} not run in {len(parts.shards)} shard(s) ({wall_s:.2f}s wall) ====="
    )


def merge_plan(
    plan: ShardPlan,
    paths: PlanPaths,
    out: KernelPaths,
    *,
    mode: str = "local",
    statuses: Mapping[int, ShardStatus] | None = None,
    job_ids: Sequence[str] = (),
) -> MergeResult:
    """See the module contract. Raises InputError when a shard is not complete or is unreadable."""
    statuses = dict(statuses or {})
    for s in plan.shards:
        statuses[s.index] = read_status(paths, s.index, plan.plan_id)  # the manifests are the truth
    missing = [
        f"{i} ({st.state}{': ' + st.detail if st.detail else ''})"
        for i, st in sorted(statuses.items())
        if not st.done
    ]
    if missing:
        raise InputError(
            f"cannot merge plan {plan.plan_id}: shard(s) not complete: {', '.join(missing)}", path=paths.root
        )
    written: list[Path] = []
    results: dict[str, RunResult] = {}
    notes: list[str] = []
    paths.merged_dir.mkdir(parents=True, exist_ok=True)
    for rr in plan.roles:
        parts = _gather(rr, plan, paths, statuses)
        if not parts.shards:
            notes.append(f"{rr.backend}: nothing selected in any shard; nothing merged for {rr.role}")
            continue
        starts = [s["started_at"] for s in parts.shards if isinstance(s.get("started_at"), (int, float))]
        ends = [s["finished_at"] for s in parts.shards if isinstance(s.get("finished_at"), (int, float))]
        wall = (max(ends) - min(starts)) if starts and ends else 0.0
        log_path = paths.merged_dir / f"{rr.role}.raw.log"
        write_concatenated(log_path, parts.log_pieces, _summary(parts, wall))
        rc = 1 if parts.failed or parts.not_run or any(r not in (0, 5) for r in parts.rcs) else 0
        result = RunResult(
            spec=rr.spec,
            rc=rc,
            raw_log_path=log_path,
            events=tuple(parts.events),
            collected=tuple(parts.collected),
            outcomes=parts.outcomes,
            failed=parts.failed,
            not_run=parts.not_run,
            attempts=tuple(parts.attempts),
            launch_sets=tuple(parts.launch_sets),
            cancelled=False,
            started_at=min(starts) if starts else time.time(),
            duration_s=wall,
            collect_output="",
            notes=tuple(parts.notes),
        )
        hosts = sorted({str(s["host"]) for s in parts.shards})
        models = sorted({gpu_model(s["gpu_name"]) for s in parts.shards})
        capabilities = sorted(
            {str(s["compute_capability"]) for s in parts.shards if s.get("compute_capability")}
        )
        overrides = {
            "host": hosts[0] if len(hosts) == 1 else ", ".join(hosts),
            "gpu": models[0] if len(models) == 1 else "mixed: " + ", ".join(models) + " (see measured_on)",
            # the shards' GPUs, not the merging host's (which may have none, or another model)
            "compute_capability": capabilities[0] if len(capabilities) == 1 else None,
            "measured_on": parts.measured_on,
            "compile_cache": _merged_compile_cache(parts.shards),
            "scaleout": {
                "plan_id": plan.plan_id,
                "mode": mode,
                "job_ids": list(job_ids),
                "shards": parts.shards,
                "merged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
        }
        written.extend(write_results(result, rr.spec, out, metadata_overrides=overrides))
        results[rr.role] = result
    session = _read_json(out.session_json) if out.session_json.is_file() else {}
    mixed = mixed_gpu_rows(session)
    record = {
        "plan_id": plan.plan_id,
        "merged_at": time.time(),
        "mode": mode,
        "job_ids": list(job_ids),
        "roles": sorted(results),
        "written": [str(p) for p in dict.fromkeys(written)],
        "mixed_gpu_rows": [r.describe() for r in mixed.rows],
    }
    atomic_write_bytes(paths.root / "merged.json", (json.dumps(record, indent=1) + "\n").encode(), paths.root)
    return MergeResult(
        plan_id=plan.plan_id,
        written=tuple(dict.fromkeys(written)),
        results=results,
        mixed=mixed,
        notes=tuple(notes),
    )


def _merged_compile_cache(shards: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's cold/warm split from its shards' records (each shard's own is under ``scaleout.shards``)."""
    recs = [s.get("compile_cache") for s in shards]
    known = [r for r in recs if isinstance(r, Mapping) and r.get("dir")]
    if not known:
        return {"dir": None, "state": "not recorded", "note": "no --compile-cache in the shards' runs"}
    states = sorted({str(r.get("state")) for r in known})
    dirs = sorted({str(r.get("dir")) for r in known})
    return {
        "dir": dirs[0] if len(dirs) == 1 else dirs,
        "state": states[0] if len(states) == 1 else "mixed",
        "shard_states": [r.get("state") if isinstance(r, Mapping) else None for r in recs],
    }
