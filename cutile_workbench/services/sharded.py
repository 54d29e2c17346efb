"""Sharded re-run of chosen configs over this node's GPUs: the service behind ``G`` on the TUI's Ratios.

Contract:
- :func:`sharded_rerunner` ``(ws, candidate_backend, gpus)`` → ``(ShardedRerun | None, why)``. It
  is offered where a live re-run can resolve the configs' node ids
  (:func:`~cutile_workbench.services.runs.rerun_cwd`) and either ``gpus`` was given (the app's ``--gpus``:
  parsed and probed with nvidia-smi now, ``InputError`` when bad) or at least two GPUs are visible
  (:func:`~cutile_workbench.run.scaleout.devices.count_visible_gpus`, no nvidia-smi at start-up; the GPUs are
  probed when a run starts). ``why`` explains a refusal the user asked for (``gpus`` given); else "".
- :meth:`ShardedRerun.__call__` ``(rows, on_event, cancel)`` (called from a thread) re-runs the
  rows' candidate and baseline node ids (:func:`~cutile_workbench.services.runs.rerun_targets`, the same
  ids, CUPTI environment and workbench harness as the one-config live re-run) through
  :func:`~cutile_workbench.run.scaleout.service.run_scaled` in local mode: one plan (a row's candidate and
  baseline stay on one GPU), one worker per GPU slot, the merge. ``on_event`` gets the service's
  event stream unchanged; ``cancel`` (Escape) stops every worker (SIGTERM to its group, which stops
  its pytest child; SIGKILL after the grace) and nothing is merged.
- Every call writes into a **fresh scratch out root** (under ``scratch_parent``, else the system
  temp dir), never into the workspace: a subset of configs must not replace the workspace's logs,
  and the recorded session is read-only. The rows' ids are listed per role in
  ``<scratch>/<kernel>/workbench/rerun/ids.<role>.txt`` (the select plugin keeps exactly them).
- Returns :class:`ShardedOutcome`: the service's result, where it merged, E's ratio table of the
  merged scratch root (the same ``ratio_table`` as ``table``) and summary lines comparing it with
  the rows as shown. Errors before any shard ran (collection, GPUs) raise ``WorkbenchError``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.infra.cancel import install_cancel_handlers as install_cancel_handlers
from cutile_workbench.infra.cancel import restore_handlers as restore_handlers
from cutile_workbench.model import RatioRow, RatioTable
from cutile_workbench.run.scaleout import console as console
from cutile_workbench.run.scaleout.console import ConsolePrinter as ConsolePrinter
from cutile_workbench.run.scaleout.devices import (
    Device,
    count_visible_gpus,
    nvidia_smi_gpus,
    parse_gpus,
    resolve_devices,
)
from cutile_workbench.run.scaleout.plan import RoleRun
from cutile_workbench.run.scaleout.service import ScaleoutRequest, ScaleoutResult, run_scaled
from cutile_workbench.run.scaleout.worker import SELECT_PLUGIN
from cutile_workbench.run.spec import Role, RunSpec
from cutile_workbench.services.runs import rerun_cwd, rerun_env, rerun_targets
from cutile_workbench.stages.e.stats import geomean


@dataclass(frozen=True)
class ShardedOutcome:
    """What a sharded re-run did; ``summary`` is what a face shows (one line each)."""

    rc: int  # ScaleoutResult.rc: 0 merged, all passed/skipped; 1 failures or shards to rerun; 2 cancelled
    cancelled: bool
    summary: tuple[str, ...]
    merged_into: Path | None = None  # the scratch out root, when merged
    table: RatioTable | None = None
    result: ScaleoutResult | None = None


@dataclass(frozen=True)
class ShardedRerun:
    """Re-runs chosen configs sharded over GPU slots (see the module contract)."""

    kernel: str
    candidate_backend: str
    cwd: Path  # where the node ids resolve
    gpus: tuple[str, ...] | None  # --gpus entries; None = every visible GPU (probed when a run starts)
    slots: int  # GPU slots (shards) a run uses
    probe: bool = True  # False: pass the entries through unchecked (CPU-only suites, tests)
    scratch_parent: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # extra environment of every child
    extra_args: tuple[str, ...] = ()  # extra pytest arguments of every child
    python: str = sys.executable
    per_test_timeout_s: float = 600.0

    def slot_label(self) -> str:
        which = ", ".join(self.gpus) if self.gpus is not None else "all visible"
        return f"{self.slots} GPU slot{'s' if self.slots != 1 else ''} ({which})"

    def describe(self, rows: Sequence[RatioRow]) -> str:
        """One sentence: what a run of ``rows`` would do."""
        roles = self._ids(rows)
        backends = " + ".join(b for b, _t, _ids in roles.values())
        ids = sum(len(i) for _b, _t, i in roles.values())
        return (
            f"Re-run {len(rows)} config(s) ({backends}: {ids} node ids) over {self.slot_label()}: one worker per "
            "slot, each config's candidate and baseline on the same GPU, then merged into a new scratch out "
            "root (this session is not changed)."
        )

    def devices(self) -> tuple[Device, ...]:
        entries = list(self.gpus) if self.gpus is not None else None
        return tuple(resolve_devices(entries, probe=self.probe))

    def _ids(self, rows: Sequence[RatioRow]) -> dict[Role, tuple[str, str, list[str]]]:
        """role → (backend, id token, node ids in row order); the candidate first."""
        by_role: dict[Role, tuple[str, str, list[str]]] = {}
        for row in rows:
            for t in rerun_targets(row, self.candidate_backend):
                backend, _token, ids = by_role.setdefault(t.role, (t.backend, t.token, []))
                if backend != t.backend:
                    raise InputError(
                        f"rows name two backends for {t.role}: {backend} and {t.backend}", key=t.role
                    )
                if t.nodeid not in ids:
                    ids.append(t.nodeid)
        return by_role

    def roles(self, rows: Sequence[RatioRow], kernel_dir: KernelPaths) -> tuple[RoleRun, ...]:
        """One RoleRun per role, restricted to the rows' ids (listed under ``kernel_dir``)."""
        if not rows:
            raise InputError("no config to re-run (the table shows none)", key="rows")
        files = list(dict.fromkeys(r.func_key.split("::")[0] for r in rows))
        id_dir = kernel_dir.workbench_dir / "rerun"
        id_dir.mkdir(parents=True, exist_ok=True)
        out: list[RoleRun] = []
        for role, (backend, token, ids) in self._ids(rows).items():
            ids_file = id_dir / f"ids.{role}.txt"
            ids_file.write_text("".join(f"{n}\n" for n in ids), encoding="utf-8")
            spec = RunSpec(
                kernel=self.kernel,
                test_target=files[0],
                cwd=self.cwd,
                role=role,
                python=self.python,
                env={**rerun_env(token), **self.env},
                workbench_harness=True,
                backend_token=token,
                per_test_timeout_s=self.per_test_timeout_s,
                extra_args=(
                    *self.extra_args,
                    *files[1:],
                    "-p",
                    SELECT_PLUGIN,
                    "--workbench-only-ids",
                    str(ids_file),
                ),
            )
            out.append(RoleRun(backend=backend, role=role, spec=spec))
        return tuple(out)

    def __call__(
        self, rows: Sequence[RatioRow], on_event: Callable[[Any], None], cancel: threading.Event
    ) -> ShardedOutcome:
        devices = self.devices()
        scratch = Path(tempfile.mkdtemp(prefix="cutile-workbench-sharded-", dir=self.scratch_parent))
        out = KernelPaths.under(scratch, self.kernel)
        req = ScaleoutRequest(
            kernel=self.kernel, out=out, roles=self.roles(rows, out), mode="local", devices=devices
        )
        result = run_scaled(req, on_event=on_event, cancel=cancel)
        return outcome_of(result, scratch, self.kernel, rows)


def outcome_of(
    result: ScaleoutResult, scratch: Path, kernel: str, shown: Sequence[RatioRow]
) -> ShardedOutcome:
    """The outcome's summary: where it merged and E's ratios there against the rows as shown."""
    if result.cancelled:
        return ShardedOutcome(
            result.rc,
            True,
            (
                "cancelled: every worker was stopped; nothing merged",
                f"shards finished so far are kept under {result.paths.root}",
            ),
            result=result,
        )
    if result.merged is None:
        bad = ", ".join(str(i) for i in result.not_complete)
        return ShardedOutcome(
            result.rc,
            False,
            (
                f"shard(s) {bad} did not complete; nothing merged (each shard's worker.log is under {result.paths.root})",
            ),
            result=result,
        )
    from cutile_workbench.artifacts.workspace import command_line

    lines = [
        f"merged into {scratch / kernel}; open it with: {command_line('--out-root', str(scratch), kernel)}"
    ]
    for role, r in result.merged.results.items():
        backend = result.plan.role_run(role).backend
        passed = sum(1 for o in r.outcomes.values() if o == "passed")
        lines.append(f"{backend}: {passed} passed, {len(r.failed)} failed, {len(r.not_run)} not run")
    lines += [f"MIXED GPUs: {row.describe()}" for row in result.merged.mixed.rows]
    table: RatioTable | None = None
    try:
        from cutile_workbench.artifacts.workspace import open_workspace
        from cutile_workbench.services.stage_e import ratio_table

        table = ratio_table(open_workspace(kernel, out_root=scratch))
    except WorkbenchError as exc:
        lines.append(f"no ratio table from the merged logs: {exc}")
    if table is not None:
        lines.append(compare_line(shown, table))
    return ShardedOutcome(result.rc, False, tuple(lines), merged_into=scratch, table=table, result=result)


def compare_line(shown: Sequence[RatioRow], table: RatioTable) -> str:
    """``geomean 1.083x → 1.079x over N rows with a ratio`` (the same rows on both sides)."""
    before = {(r.func_key, r.params): r.ratio for r in shown if r.ratio is not None}
    pairs = [
        (before[(r.func_key, r.params)], r.ratio)
        for r in table.rows
        if (r.func_key, r.params) in before and r.ratio is not None
    ]
    if not pairs:
        return f"re-run: {len(table.matched)} row(s) with a ratio; none to compare with the rows shown"
    old = geomean([b for b, _ in pairs])
    new = geomean([a for _, a in pairs])
    return (
        f"geomean {old:.3f}x (shown) → {new:.3f}x (re-run) over the {len(pairs)} row(s) both have a ratio for"
    )


def sharded_rerunner(
    ws: Workspace, candidate_backend: str, gpus: str | None = None, *, environ: Mapping[str, str] = os.environ
) -> tuple[ShardedRerun | None, str]:
    """See the module contract."""
    cwd, why = rerun_cwd(ws)
    if gpus is not None:
        entries = parse_gpus(gpus)
        if not nvidia_smi_gpus():
            raise InputError(
                "--gpus: nvidia-smi lists no GPU on this machine (the sharded re-run needs GPUs)",
                key="--gpus",
            )
        devices = resolve_devices(entries)  # InputError naming an unknown GPU
        if cwd is None:
            return None, why or "this workspace has no suite to re-run (open it with --tilegym DIR)"
        return ShardedRerun(
            ws.kernel, candidate_backend, cwd, tuple(str(d.visible) for d in devices), slots=len(devices)
        ), ""
    slots = count_visible_gpus(environ)
    if cwd is None or slots < 2:
        return None, ""
    return ShardedRerun(ws.kernel, candidate_backend, cwd, None, slots=slots), ""
