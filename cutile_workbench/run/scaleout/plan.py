"""Shard planning and the on-disk layout of a sharded run.

Contract:
- :func:`collect_roles` collects each role's node ids once (the roles in parallel), on the host
  that starts the run, with the runner's own collection (:func:`cutile_workbench.run.runner.collect`) and the
  same exact backend-token filter :func:`cutile_workbench.run.runner.run` applies. A failed collection raises
  :class:`InputError` with pytest's last lines; a cancelled one raises :class:`Cancelled`.
- :func:`plan_shards` groups node ids into rows ``(func_key, params)`` (contract §3.5) so the
  candidate and every baseline of one config always land in the **same shard**: they are measured
  on the same GPU, and no ratio ever divides numbers from two GPUs. Rows (in collection order, the
  first role's order first) are cut into ``n`` **contiguous** blocks of near-equal node-id count.
  Contiguity is what makes the merge exact: the shards' logs concatenated in shard order list every
  role's records in single-run order, so the merged ratio table — row order and seeded bootstrap
  CIs included — is the one one process would produce. TileGym's benchmark is time-budgeted
  (``WARMUP``/``REP`` in ms), so a config's cost is nearly shape-independent and id-count balance
  is time balance to first order. Fewer rows than shards gives fewer shards, never an empty one.
- The plan id is the first 12 hex digits of the sha256 of the canonical JSON of (kernel, role
  specs, per-shard id lists). The same selection at the same scale always plans the same id, so a
  rerun finds its shards (resume); another selection or scale gets its own directory (nothing of
  the first is overwritten).
- Layout (:class:`PlanPaths`): ``<kernel>/workbench/shards/<plan_id>/`` holds ``plan.json``; one
  TileGym kernel-layout dir per shard, ``<index>/`` (written by
  :func:`cutile_workbench.run.results.write_results`), with ``ids.<role>.txt``, ``shard.json`` (the manifest),
  ``progress.jsonl`` and ``worker.log``; ``locks/<index>.lock``; ``slurm/`` (batch script,
  submissions, per-task logs) and ``merged/`` (the merged raw logs).
- A shard is **done** when its manifest says ``complete`` for this plan id: every role's run ended
  on its own (no cancel, no total timeout) with nothing left not run. Failed configs (killed hangs,
  crashes, errors) are results, isolated by the runner as in a single run; a shard that did not
  complete is rerun from scratch (all roles, so candidate and baseline stay on one GPU).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.testids import split_nodeid
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.run.runner import collect
from cutile_workbench.run.spec import ROLES, Role, RunSpec

PLAN_VERSION = 1
ShardState = Literal["pending", "running", "complete", "incomplete", "failed", "cancelled"]


@dataclass
class Cancelled(WorkbenchError):
    """The user cancelled (Ctrl-C, scancel); nothing was merged."""

    title: str = "Cancelled"
    exit_code: int = 2


# --------------------------------------------------------------------------- plan model


@dataclass(frozen=True)
class RoleRun:
    """One backend's run: the record key, its layout role and the runner spec (unsharded)."""

    backend: str
    role: Role
    spec: RunSpec


@dataclass(frozen=True)
class Shard:
    """The node ids one shard runs, per role, in collection order."""

    index: int
    by_role: Mapping[str, tuple[str, ...]]

    @property
    def nodeids(self) -> tuple[str, ...]:
        return tuple(n for ids in self.by_role.values() for n in ids)

    @property
    def rows(self) -> int:
        return len({row_key(n) for n in self.nodeids})


@dataclass(frozen=True)
class ShardPlan:
    kernel: str
    roles: tuple[RoleRun, ...]
    shards: tuple[Shard, ...]
    plan_id: str
    requested_shards: int
    created_at: float = 0.0
    created_on: str = ""

    def role_run(self, role: str) -> RoleRun:
        for r in self.roles:
            if r.role == role:
                return r
        raise KeyError(role)

    @property
    def configs(self) -> int:
        return sum(len(s.nodeids) for s in self.shards)

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.shards)


def row_key(nodeid: str) -> tuple[str, str]:
    """``(func_key, params)``: the row a node id belongs to (ids without a known token: their own row)."""
    func, token, params = split_nodeid(nodeid)
    return (func, params) if token else (func, nodeid)


# --------------------------------------------------------------------------- collection and planning


def collect_roles(roles: Sequence[RoleRun], *, cancel: threading.Event | None = None) -> dict[str, list[str]]:
    """Each role's node ids (collected once here, the roles in parallel); see the module contract."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, len(roles)), thread_name_prefix="collect") as pool:
        answers = list(pool.map(lambda r: collect(r.spec, cancel=cancel), roles))
    out: dict[str, list[str]] = {}
    for r, (rc, ids, text) in zip(roles, answers, strict=True):
        if rc == 130:
            raise Cancelled("cancelled during collection")
        if r.spec.backend_token is not None:
            ids = [n for n in ids if split_nodeid(n)[1] == r.spec.backend_token]
        if not ids and rc not in (0, 5):
            tail = "\n".join(text.strip().splitlines()[-12:])
            raise InputError(
                f"collecting {r.backend} failed here (pytest rc {rc}); the plan is made on the host "
                f"that starts the run, so `pytest --collect-only` must work here:\n{tail}",
                key=r.spec.test_target,
            )
        out[r.role] = ids
    return out


def plan_shards(
    kernel: str,
    roles: Sequence[RoleRun],
    collected: Mapping[str, Sequence[str]],
    n_shards: int,
    *,
    now: float | None = None,
    host: str = "",
) -> ShardPlan:
    """Group ids into rows and cut the rows into at most ``n_shards`` contiguous, balanced blocks."""
    if n_shards < 1:
        raise InputError(f"need at least one shard, got {n_shards}", key="shards")
    rows: dict[tuple[str, str], dict[str, list[str]]] = {}
    for r in roles:
        for nodeid in collected.get(r.role, ()):
            rows.setdefault(row_key(nodeid), {}).setdefault(r.role, []).append(nodeid)
    if not rows:
        raise InputError("no test matched the selection for any backend", key="-k")
    weights = [sum(len(v) for v in by_role.values()) for by_role in rows.values()]
    cuts = balanced_cuts(weights, min(n_shards, len(weights)))
    shards: list[Shard] = []
    items = list(rows.values())
    for index, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(items)], strict=True)):
        by_role: dict[str, tuple[str, ...]] = {
            r.role: tuple(n for row in items[lo:hi] for n in row.get(r.role, ())) for r in roles
        }
        shards.append(Shard(index=index, by_role=by_role))
    plan_id = fingerprint(kernel, roles, shards)
    return ShardPlan(
        kernel=kernel,
        roles=tuple(roles),
        shards=tuple(shards),
        plan_id=plan_id,
        requested_shards=n_shards,
        created_at=time.time() if now is None else now,
        created_on=host,
    )


def balanced_cuts(weights: Sequence[int], k: int) -> list[int]:
    """``k - 1`` increasing cut indices splitting ``weights`` into ``k`` non-empty contiguous parts
    whose sums are as close to ``total / k`` as a left-to-right greedy cut gets."""
    cuts: list[int] = []
    total = sum(weights)
    acc = 0
    for i, w in enumerate(weights[:-1]):
        acc += w
        part = len(cuts) + 1
        left_items = len(weights) - (i + 1)
        left_parts = k - part
        if left_parts <= 0:
            break
        # cut when this part reached its share, or when every later item must start its own part
        if acc * k >= part * total or left_items == left_parts:
            cuts.append(i + 1)
    return cuts


def fingerprint(kernel: str, roles: Sequence[RoleRun], shards: Sequence[Shard]) -> str:
    doc = {
        "kernel": kernel,
        "roles": [role_to_json(r) for r in roles],
        "shards": [{r: list(ids) for r, ids in s.by_role.items()} for s in shards],
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- (de)serialization


def spec_to_json(spec: RunSpec) -> dict[str, Any]:
    """Every RunSpec field, JSON-typed (Paths as absolute strings, tuples as lists)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if isinstance(value, Path):
            value = str(value.resolve())
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = {str(k): str(v) for k, v in value.items()}
        out[f.name] = value
    return out


def spec_from_json(doc: Mapping[str, Any], where: str) -> RunSpec:
    """Inverse of :func:`spec_to_json`; InputError for a field this RunSpec does not have."""
    hints = typing.get_type_hints(RunSpec)
    names = {f.name for f in dataclasses.fields(RunSpec)}
    kwargs: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in names:
            raise InputError(
                f"plan spec has field {key!r} this workbench's RunSpec lacks (written by another version?)",
                path=where,
                key=key,
            )
        kwargs[key] = _restore(hints[key], value)
    return RunSpec(**kwargs)


def _restore(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    options = (
        typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        else (hint,)
    )
    for opt in options:
        origin = typing.get_origin(opt) or opt
        if origin is Path and isinstance(value, str):
            return Path(value)
        if origin is tuple and isinstance(value, list):
            return tuple(value)
    return value


def role_to_json(r: RoleRun) -> dict[str, Any]:
    return {"backend": r.backend, "role": r.role, "spec": spec_to_json(r.spec)}


def plan_to_json(plan: ShardPlan) -> dict[str, Any]:
    return {
        "version": PLAN_VERSION,
        "plan_id": plan.plan_id,
        "kernel": plan.kernel,
        "requested_shards": plan.requested_shards,
        "created_at": plan.created_at,
        "created_on": plan.created_on,
        "roles": [role_to_json(r) for r in plan.roles],
        "shards": [
            {"index": s.index, "by_role": {k: list(v) for k, v in s.by_role.items()}} for s in plan.shards
        ],
    }


def plan_from_json(doc: Any, where: str) -> ShardPlan:
    try:
        if not isinstance(doc, dict) or doc.get("version") != PLAN_VERSION:
            raise InputError(f"not a version-{PLAN_VERSION} shard plan", path=where, key="version")
        roles = []
        for i, r in enumerate(doc["roles"]):
            if r["role"] not in ROLES:
                raise InputError(f"unknown role {r['role']!r}", path=where, key=f"roles[{i}].role")
            roles.append(
                RoleRun(backend=str(r["backend"]), role=r["role"], spec=spec_from_json(r["spec"], where))
            )
        shards = tuple(
            Shard(
                index=int(s["index"]), by_role={str(k): tuple(map(str, v)) for k, v in s["by_role"].items()}
            )
            for s in doc["shards"]
        )
        plan = ShardPlan(
            kernel=str(doc["kernel"]),
            roles=tuple(roles),
            shards=shards,
            plan_id=str(doc["plan_id"]),
            requested_shards=int(doc["requested_shards"]),
            created_at=float(doc.get("created_at", 0.0)),
            created_on=str(doc.get("created_on", "")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"malformed shard plan ({type(exc).__name__}: {exc})", path=where) from None
    if [s.index for s in plan.shards] != list(range(len(plan.shards))):
        raise InputError("shard indices must be 0..n-1 in order", path=where, key="shards")
    if fingerprint(plan.kernel, plan.roles, plan.shards) != plan.plan_id:
        raise InputError(
            "plan content does not match its plan_id (edited by hand?)", path=where, key="plan_id"
        )
    return plan


def load_plan(path: Path) -> ShardPlan:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read shard plan: {exc.strerror or exc}", path=path) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"shard plan is not JSON ({exc})", path=path) from None
    return plan_from_json(doc, str(path))


# --------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class PlanPaths:
    """Every path of one plan's directory (see the module contract)."""

    root: Path
    kernel: str

    @classmethod
    def for_plan(cls, out: KernelPaths, plan_id: str) -> PlanPaths:
        return cls(root=out.workbench_dir / "shards" / plan_id, kernel=out.kernel)

    @property
    def plan_json(self) -> Path:
        return self.root / "plan.json"

    def shard_dir(self, index: int) -> Path:
        return self.root / str(index)

    def shard_out(self, index: int) -> KernelPaths:
        """The shard's own kernel dir (the runner lays its results here as in a single run)."""
        return KernelPaths(root=self.shard_dir(index), kernel=self.kernel)

    def ids_file(self, index: int, role: str) -> Path:
        return self.shard_dir(index) / f"ids.{role}.txt"

    def manifest(self, index: int) -> Path:
        return self.shard_dir(index) / "shard.json"

    def progress(self, index: int) -> Path:
        return self.shard_dir(index) / "progress.jsonl"

    def worker_log(self, index: int) -> Path:
        return self.shard_dir(index) / "worker.log"

    def lock(self, index: int) -> Path:
        return self.root / "locks" / f"{index}.lock"

    @property
    def slurm_dir(self) -> Path:
        return self.root / "slurm"

    @property
    def merged_dir(self) -> Path:
        return self.root / "merged"


def save_plan(plan: ShardPlan, paths: PlanPaths) -> None:
    """Write ``plan.json`` and each shard's ``ids.<role>.txt`` (atomic; an identical plan is kept)."""
    paths.root.mkdir(parents=True, exist_ok=True)
    if paths.plan_json.is_file():
        existing = load_plan(paths.plan_json)
        if existing.plan_id != plan.plan_id:  # cannot happen: the directory is named by the id
            raise InputError(
                f"{paths.plan_json} holds plan {existing.plan_id}, not {plan.plan_id}", path=paths.plan_json
            )
    else:
        data = (json.dumps(plan_to_json(plan), indent=1, sort_keys=True) + "\n").encode()
        atomic_write_bytes(paths.plan_json, data, paths.root)
    for s in plan.shards:
        for role, ids in s.by_role.items():
            target = paths.ids_file(s.index, role)
            data = "".join(n + "\n" for n in ids).encode("utf-8")
            if not target.is_file() or target.read_bytes() != data:
                atomic_write_bytes(target, data, paths.root)


# --------------------------------------------------------------------------- manifests


@dataclass(frozen=True)
class ShardStatus:
    """What a shard's manifest says (``state`` ``pending`` when it has none)."""

    index: int
    state: ShardState
    plan_id: str = ""
    host: str = ""
    device: str | None = None
    gpu_name: str = "unknown"
    gpu_uuid: str = "unknown"
    detail: str = ""
    started_at: float | None = None
    finished_at: float | None = None
    slurm: Mapping[str, str] = field(default_factory=dict)
    roles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.state == "complete"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": PLAN_VERSION,
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
            "slurm": dict(self.slurm),
            "roles": {k: dict(v) for k, v in self.roles.items()},
        }


def read_status(paths: PlanPaths, index: int, plan_id: str) -> ShardStatus:
    """The shard's manifest; a missing one is ``pending``, an unreadable or foreign one ``failed``."""
    path = paths.manifest(index)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ShardStatus(index=index, state="pending")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return ShardStatus(index=index, state="failed", detail=f"unreadable manifest {path}: {exc}")
    try:
        fields = {f.name for f in dataclasses.fields(ShardStatus)}
        status = ShardStatus(**{k: v for k, v in doc.items() if k in fields})
    except TypeError as exc:
        return ShardStatus(index=index, state="failed", detail=f"malformed manifest {path}: {exc}")
    if status.plan_id != plan_id or status.index != index:
        return ShardStatus(
            index=index, state="failed", detail=f"manifest {path} belongs to another plan/shard"
        )
    return status


def write_status(paths: PlanPaths, status: ShardStatus) -> None:
    data = (json.dumps(status.to_json(), indent=1, sort_keys=True, default=str) + "\n").encode()
    atomic_write_bytes(paths.manifest(status.index), data, paths.root)


def reset_shard(paths: PlanPaths, index: int) -> None:
    """Remove a shard's previous attempt (results, manifest, progress) before it runs again.

    ``ids.*.txt`` and ``worker.log`` (appended to, so earlier attempts stay readable) are kept.
    """
    import shutil

    d = paths.shard_dir(index)
    if not d.is_dir():
        return
    for child in d.iterdir():
        if child.name.startswith("ids.") or child.name == "worker.log":
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def host_name() -> str:
    import socket

    return socket.gethostname() or os.environ.get("HOSTNAME", "unknown")
