"""A run's results into the TileGym artifact layout (contract §1.2) (moved out of ``run/runner.py``).

Contract: :func:`write_results` lays a :class:`~cutile_workbench.run.spec.RunResult` into the
artifact layout with atomic writes (``infra.atomicio``) under the kernel dir's writer lock
(``cutile_workbench.artifacts.writer.kernel_lock``), refusing any target that resolves (symlinks
included) outside the kernel dir; existing evidence files are read and checked first, so a malformed
one raises before anything is written. :func:`session_metadata` is what ``session.json`` records of
one role's run, :func:`gpu_description` the GPU the child used (its own NVML reading first, else
:func:`cutile_workbench.gpu.visible.gpu_query`).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.events import Event
from cutile_workbench.artifacts.launch_store import RawMember
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.gpu.visible import gpu_query
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.infra.atomicio import ensure_inside as _ensure_inside
from cutile_workbench.model import LaunchSet
from cutile_workbench.run.spec import ROLES, RunResult, RunSpec, check_kernel_dir

RAW_LOG_TARGET: dict[str, str] = {
    "candidate": "perf_full_log",
    "baseline_cutile": "baseline_cutile",
    "baseline_triton_tileir": "baseline_triton_tileir",
}


def raw_log_destination(role: str, out: KernelPaths) -> Path:
    """Where a role's raw log goes (contract §1.2); E sanitizes the candidate's into perf_cutile_rs.txt."""
    if role not in RAW_LOG_TARGET:
        raise InputError(f"unknown role {role!r} (expected one of {', '.join(ROLES)})", key="role")
    return Path(getattr(out, RAW_LOG_TARGET[role]))


def write_results(
    result: RunResult, spec: RunSpec, out: KernelPaths, *, metadata_overrides: Mapping[str, Any] | None = None
) -> list[Path]:
    """Lay a run into the artifact layout; returns the written paths. All reads/validation first.

    raw log → the role's log file; events → ``workbench/events.jsonl`` (this role's previous lines
    replaced, each line carrying ``role``); launch sets → merged into ``workbench/launches.json.gz``
    (same ``(nodeid, backend)`` replaced; one gzip member per set + ``launches.idx.json``:
    :mod:`cutile_workbench.artifacts.launch_store`); metadata → ``workbench/session.json`` (``runs[role]``).
    ``metadata_overrides`` (hook for :mod:`cutile_workbench.run.scaleout.merge`) replaces keys of
    ``runs[role]``, e.g. the shards' hosts and GPUs instead of this process's.
    A malformed existing evidence file raises :class:`InputError` before anything is written.
    """
    check_kernel_dir(out)
    root = out.root
    log_dest = raw_log_destination(spec.role, out)
    # --- read and check everything before the first write
    kept_lines = _existing_event_lines(out.events_jsonl, spec.role)
    session = _existing_session(out.session_json)
    merged_sets: list[LaunchSet | RawMember] | None = None
    if result.launch_sets:
        from cutile_workbench.artifacts.launch_store import index_path_for, open_store

        # per-config members: the kept ones are copied as bytes (nothing of them is parsed)
        old = open_store(out.launches_json) if out.launches_json.exists() else None
        new_keys = {(s.nodeid, s.backend) for s in result.launch_sets}
        keep = (
            []
            if old is None
            else [i for i, e in enumerate(old.entries) if (e.nodeid, e.backend) not in new_keys]
        )
        merged_sets = [*(old.raw_members(keep) if old is not None else ()), *result.launch_sets]
        _ensure_inside(index_path_for(out.launches_json), root)
    for p in (log_dest, out.events_jsonl, out.session_json, out.launches_json):
        _ensure_inside(p, root)
    # --- write, holding the kernel dir's writer lock so a report write never sees half of it
    from cutile_workbench.artifacts.writer import kernel_lock

    root.mkdir(parents=True, exist_ok=True)
    with kernel_lock(root):
        return _write_locked(
            result, spec, out, log_dest, kept_lines, merged_sets, session, dict(metadata_overrides or {})
        )


def _write_locked(
    result: RunResult,
    spec: RunSpec,
    out: KernelPaths,
    log_dest: Path,
    kept_lines: list[str],
    merged_sets: list[LaunchSet | RawMember] | None,
    session: dict[str, Any],
    metadata_overrides: dict[str, Any],
) -> list[Path]:
    root = out.root
    written: list[Path] = []
    atomic_write_bytes(log_dest, result.raw_log_path.read_bytes(), root)
    written.append(log_dest)
    new_lines = [
        json.dumps({**ev.to_dict(), "role": spec.role}, default=str, ensure_ascii=True)
        for ev in result.events
    ]
    atomic_write_bytes(out.events_jsonl, ("".join(ln + "\n" for ln in kept_lines + new_lines)).encode(), root)
    written.append(out.events_jsonl)
    if merged_sets is not None:
        from cutile_workbench.artifacts.launch_store import write_store

        written.append(out.launches_json)  # one gzip member per set + its index (temp files + os.replace)
        written.append(write_store(out.launches_json, merged_sets, root))
    session.setdefault("version", 1)
    session["kernel"] = spec.kernel
    session.setdefault("runs", {})[spec.role] = {**session_metadata(result, spec), **metadata_overrides}
    # issue #15: one history entry per run (workbench/history.sqlite); never blocks the results
    from cutile_workbench.history.record import record_run

    history = record_run(out, spec.role, log_dest, result.events)
    session["runs"][spec.role]["history"] = history.as_dict()
    if history.added:
        written.append(Path(history.store_path))
    atomic_write_bytes(
        out.session_json, (json.dumps(session, indent=2, sort_keys=True, default=str) + "\n").encode(), root
    )
    written.append(out.session_json)
    if spec.dump_ir_dir:
        written += _file_ir(result, spec, out)
    return written


def _file_ir(result: RunResult, spec: RunSpec, out: KernelPaths) -> list[Path]:
    """``run --dump-ir``: the IR each config ran, filed per config (``cutile_workbench.ir.filing``)."""
    from cutile_workbench.ir import filing

    raw = result.raw_log_path.read_text(encoding="utf-8", errors="replace")
    if spec.role == "candidate":
        plan = filing.plan_candidate(raw)
    else:
        names: dict[str, str] = {}
        for ev in result.events:
            if ev.event != "record":
                continue
            bench = ev.get("benchmark") or {}
            fwd = (bench.get(ev.get("framework")) or {}).get("forward") or {}
            if isinstance(fwd.get("kernel_name"), str):
                names[str(ev.get("nodeid"))] = fwd["kernel_name"]
        plan = filing.plan_reference(raw, Path(str(spec.dump_ir_dir)), names)
    return filing.write_filing(out.root, plan)


def session_metadata(result: RunResult, spec: RunSpec) -> dict[str, Any]:
    """What ``session.json`` records about one role's run (command, env overrides, host, GPU, outcome)."""
    child_env = {**os.environ, **spec.env}  # the GPU is the one the child saw, not nvidia-smi's GPU 0
    return {
        "kernel": spec.kernel,
        "role": spec.role,
        "backend_token": spec.backend_token,
        "test_target": spec.test_target,
        "k_expr": spec.k_expr,
        "cwd": str(Path(spec.cwd).resolve()),
        "python": spec.python,
        "env_overrides": dict(spec.env),
        "workbench_harness": spec.workbench_harness,
        "harness": "workbench" if spec.workbench_harness else "tilegym",
        "dump_ir_dir": spec.dump_ir_dir,
        "per_test_timeout_s": spec.per_test_timeout_s,
        "total_timeout_s": spec.total_timeout_s,
        "commands": [shlex.join(a.argv) for a in result.attempts],
        "attempts": [
            {
                "index": a.index,
                "rc": a.rc,
                "ended": a.ended,
                "detail": a.detail,
                "duration_s": round(a.duration_s, 3),
            }
            for a in result.attempts
        ],
        "rc": result.rc,
        "collected": len(result.collected),
        "outcomes": dict(result.outcomes),
        "failed": dict(result.failed),
        "not_run": dict(result.not_run),
        "cancelled": result.cancelled,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(result.started_at)),
        "duration_s": round(result.duration_s, 3),
        "compile_cache": dict(result.compile_cache)
        if result.compile_cache is not None
        else {
            "dir": None,
            "state": "not recorded",
            "note": "no --compile-cache: the toolchains used their default caches, which are not counted",
        },
        "host": socket.gethostname(),
        "gpu": gpu_description(child_env, result.events),
        "compute_capability": gpu_query("compute_cap", child_env),
        "provenance": _provenance_block(result.events),
        "notes": list(result.notes),
    }


def _provenance_block(events: Iterable[Event]) -> dict[str, Any]:
    """Toolchain, TileGym commit, torch, CUDA, driver, cupti of the child's run (issue 36)."""
    from cutile_workbench.history.provenance import provenance_from_events
    from cutile_workbench.history.provenance.toolchain import session_provenance

    try:
        return session_provenance(provenance_from_events(events))
    except InputError as exc:
        return {"recorded": False, "why": f"malformed provenance event: {exc}"}


def gpu_description(env: Mapping[str, str] | None = None, events: Iterable[Event] = ()) -> str | None:
    """``name, driver`` of the GPU a run's pytest child used, or None where nothing can tell.

    The child's own NVML reading first (its ``provenance`` events: the CUDA device torch used, else
    the first ``CUDA_VISIBLE_DEVICES`` entry), else :func:`gpu_query` for the child's environment
    ``env`` — never simply nvidia-smi's GPU 0, which a pinned shard may not be using."""
    from cutile_workbench.history.provenance import provenance_from_events

    try:
        prov = provenance_from_events(events)
    except InputError:  # a malformed provenance event: the child's reading is unknown, not fatal here
        prov = None
    if prov is not None and prov.gpu is not None and prov.gpu.name:
        return prov.gpu.name + (f", {prov.gpu.driver_version}" if prov.gpu.driver_version else "")
    return gpu_query("name,driver_version", env)


def _existing_event_lines(path: Path, role: str) -> list[str]:
    """Lines of an existing events.jsonl other than ``role``'s; InputError on a malformed line."""
    if not path.exists():
        return []
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    kept: list[str] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed event line (not JSON: {exc.msg})", path=path, line=lineno) from None
        if not isinstance(obj, dict):
            raise InputError("malformed event line (not a JSON object)", path=path, line=lineno)
        if obj.get("role") != role:
            kept.append(line)
    return kept


def _existing_session(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed session metadata ({exc.msg})", path=path, line=exc.lineno) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("runs", {}), dict):
        raise InputError(
            "session metadata must be a JSON object with an object 'runs'", path=path, key="runs"
        )
    return data
