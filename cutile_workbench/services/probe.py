"""The focused Nsight Compute probe as a service: plan it from the captures, run it, file it, show it.

Contract (the ``probe`` command, ``bench/probe_session.py`` and the TUI call exactly these):

- :func:`plan_probe` turns a :class:`ProbeRequest` into a :class:`ProbePlan` (nothing is started,
  nothing written): the E row of ``config`` (an unknown one is an ``InputError`` listing close
  matches), then one :class:`~cutile_workbench.evidence.ncu.ProbeSpec` per side from the per-launch
  captures (``f_evidence.ncu.probe_specs``: the main kernel's recorded name, the set's node id),
  optionally only the ``backends`` asked for. Where it runs follows the row's test file: a built-in
  profile's (``cutile_workbench/profiles/…``) from this package's root; anything else is TileGym's ``test_perf`` and
  needs the checkout (``--tilegym`` / ``$TILEGYM_PATH``, resolved as every command does) — without
  one, an ``InputError`` that says so. TileGym's cutile-rs side gets ``DISABLE_FALLBACK=1`` (as ``run
  --tilegym``): a silent fallback to another backend must fail, not be profiled. A side without a
  recorded kernel name cannot be filtered and is listed in ``skipped``.
- Each :class:`ProbeSide` carries the exact shell line (``f_evidence.ncu.shell_line``) and where its
  CSV goes: the kernel dir's ``workbench/probes/<backend>-<config>.csv`` when writable, else the
  current directory (the read-only recorded session).
- :func:`cannot_run` says why the probe cannot run here ("" = it can): ``ncu`` not on ``PATH``, or no
  GPU (``services.runs.gpu_probe``: nvidia-smi, then torch in the child Python).
- :func:`read_only` is E's refusal (:func:`cutile_workbench.services.stage_e.read_only_reason`, preview flag
  ``--print-command``): a probe is never filed into the recorded session.
- :func:`run_side` runs one side under ncu (``f_evidence.ncu.run_probe``: own process group, killed on
  timeout) and files the result and its raw CSV (``save_probe``, atomic, under the writer lock);
  :func:`file_csv` files a CSV ncu already wrote (the line pasted on a GPU node) the same way, once
  its kernel row is that side's recorded kernel (another kernel's CSV is refused).
- :func:`probe_rows` is the side-by-side table (candidate, reference) of the filed probes of a config;
  :func:`load` reads every filed probe of a workspace (strict: a malformed file is an ``InputError``).
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from cutile_workbench.artifacts.testids import id_token, shape_token
from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import InputError
from cutile_workbench.evidence.ncu import (
    DEFAULT_TIMEOUT_S,
    ProbeResult,
    ProbeSpec,
    parse_ncu_csv,
    probe_for,
    probe_path,
    probe_specs,
    run_probe,
    save_probe,
    shell_line,
    side_by_side,
)
from cutile_workbench.evidence.ncu import probe_advice as probe_advice  # the Timeline's line, as F's
from cutile_workbench.model import RatioRow
from cutile_workbench.run.spec import PACKAGE_ROOT, in_package_suite
from cutile_workbench.services.runs import NO_SILENT_FALLBACK
from cutile_workbench.stages.session.kernel import KernelSession


@dataclass(frozen=True)
class ProbeRequest:
    """What ``probe <kernel> --config PARAMS`` was asked to do."""

    kernel: str
    config: str
    out_root: Path | None = None
    tilegym: Path | None = None
    backends: tuple[str, ...] = ()  # () = candidate and reference
    python: str = sys.executable
    ncu: str = "ncu"


@dataclass(frozen=True)
class ProbeSide:
    spec: ProbeSpec
    csv_path: Path  # where ncu writes its CSV (--log-file)

    @property
    def shell(self) -> str:
        return shell_line(self.spec, self.csv_path)


@dataclass
class ProbePlan:
    ws: Workspace
    row: RatioRow
    candidate_backend: str
    sides: list[ProbeSide]
    suite: str  # "tilegym" | "profile"
    skipped: list[str] = field(default_factory=list)  # sides that cannot be probed, and why

    @property
    def baseline_backend(self) -> str:
        return self.row.baseline_backend or "cutile"


def open_kernel(request: ProbeRequest, env: Mapping[str, str] = os.environ) -> Workspace:
    from cutile_workbench.services import stage_f

    return stage_f.open_kernel(request.kernel, out_root=request.out_root, tilegym=request.tilegym, env=env)


def _find_row(rows: Sequence[RatioRow], config: str) -> RatioRow:
    hits = [r for r in rows if r.params == config]
    if hits:
        return next((r for r in hits if r.status == "OK"), hits[0])
    known = sorted({r.params for r in rows})
    close = difflib.get_close_matches(config, known, n=5, cutoff=0.5)
    raise InputError(
        f"no config {config!r} in the E table"
        + (f"; close matches: {', '.join(close)}" if close else f" ({len(known)} configs)"),
        key="--config",
    )


def _suite_dir(ws: Workspace, row: RatioRow) -> tuple[str, Path]:
    """(suite kind, directory the row's test runs from) — see the module contract."""
    test_file = row.func_key.partition("::")[0]
    if in_package_suite(row.func_key):
        return "profile", PACKAGE_ROOT / "cutile_workbench"
    if ws.tilegym is None:
        raise InputError(
            f"{ws.kernel} is a TileGym kernel (its E rows come from {test_file or 'TileGym'}'s "
            "test_perf): the probe runs that test, so it needs the checkout: pass --tilegym DIR or set "
            "$TILEGYM_PATH (a checkout whose cutile-rs library is built)",
            key="--tilegym",
        )
    root = Path(ws.tilegym).expanduser().resolve()
    if test_file and not (root / test_file).is_file():
        raise InputError(f"the TileGym checkout has no {test_file}", path=root / test_file, key="--tilegym")
    return "tilegym", root


def plan_probe(
    request: ProbeRequest, env: Mapping[str, str] = os.environ, ws: Workspace | None = None
) -> ProbePlan:
    """The probe of one config (see the module contract); nothing is run or written."""
    from cutile_workbench.evidence.launches import same_backend
    from cutile_workbench.services import stage_f

    ws = ws or open_kernel(request, env)
    inputs = stage_f.collect(ws)
    if inputs.table is None or not inputs.table.rows:
        raise InputError(
            "no E ratio table: the probe needs E's rows and their captures (run E first)",
            path=str(ws.kernel_dir),
        )
    # any spelling of the config (full params, the TUI's label, a node id): the one config naming
    row = _find_row(inputs.table.rows, KernelSession.of(ws).resolve_config(request.config))
    suite, cwd = _suite_dir(ws, row)
    cand = inputs.candidate_records.get((row.func_key, row.params))
    base = inputs.baseline_records.get(row.baseline_backend or "", {}).get((row.func_key, row.params))
    specs = probe_specs(
        row,
        launch_sets=inputs.launch_sets,
        candidate_backend=inputs.candidate_backend,
        candidate_record=cand,
        baseline_record=base,
        cwd=cwd,
        python=request.python,
        ncu=request.ncu,
    )
    sides_named = [(inputs.candidate_backend, cand), (row.baseline_backend or "cutile", base)]
    skipped = [
        f"{b}: no recorded kernel name (no per-launch capture and no kernel_name in its perf record): "
        "ncu's -k filter cannot be built"
        for b, _r in sides_named
        if not any(same_backend(s.backend, b) for s in specs)
    ]
    if request.backends:
        unknown = [b for b in request.backends if not any(same_backend(b, x) for x, _r in sides_named)]
        if unknown:
            raise InputError(
                f"backend {unknown[0]!r} is neither side of {row.params} (candidate "
                f"{inputs.candidate_backend}, reference {row.baseline_backend or 'n/a'})",
                key="--backend",
            )
        specs = [s for s in specs if any(same_backend(s.backend, b) for b in request.backends)]
        skipped = [x for x in skipped if any(same_backend(x.split(":", 1)[0], b) for b in request.backends)]
    if suite == "tilegym":
        specs = [
            replace(s, extra_env=tuple(NO_SILENT_FALLBACK.items()))
            if id_token(s.backend) == "cutile_rs"
            else s
            for s in specs
        ]
    writable = not read_only(ws)
    sides = [
        ProbeSide(
            s,
            probe_path(ws.paths, s.backend, s.params).with_suffix(".csv")
            if writable
            else Path.cwd() / f"ncu-{id_token(s.backend)}-{shape_token(s.params)}.csv",
        )
        for s in specs
    ]
    return ProbePlan(ws, row, inputs.candidate_backend, sides, suite, skipped)


def read_only(ws: Workspace) -> str:
    """Why no probe may be filed into ``ws`` ("" = it may): E's refusal, word for word."""
    from cutile_workbench.services.stage_e import read_only_reason

    return read_only_reason(ws, preview="--print-command")


def cannot_run(plan: ProbePlan, python: str = sys.executable) -> str:
    """Why ncu cannot run here ("" = it can): no ``ncu`` on PATH, or no visible GPU."""
    from cutile_workbench.services.runs import gpu_probe

    ncu = plan.sides[0].spec.ncu if plan.sides else "ncu"
    if shutil.which(ncu) is None:
        return f"{ncu} (Nsight Compute) is not on PATH"
    present, how = gpu_probe(python)
    return "" if present else f"no GPU visible ({how})"


def run_side(
    plan: ProbePlan,
    side: ProbeSide,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> tuple[ProbeResult, Path]:
    """Run one side under ncu and file it; (result, probe file). InputError when ncu fails or is killed."""
    why = read_only(plan.ws)
    if why:
        raise InputError(why, path=str(plan.ws.kernel_dir))
    result, raw = run_probe(side.spec, plan.ws.paths, timeout_s=timeout_s, env=env)
    return result, save_probe(plan.ws.paths, result, raw_csv=raw)


def file_csv(plan: ProbePlan, side: ProbeSide, csv_file: Path) -> tuple[ProbeResult, Path]:
    """File a CSV ncu wrote elsewhere (the printed line run on a GPU node) as ``side``'s probe."""
    import time

    why = read_only(plan.ws)
    if why:
        raise InputError(why, path=str(plan.ws.kernel_dir))
    try:
        raw = Path(csv_file).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(
            f"cannot read the ncu CSV: {exc.strerror or exc}", path=str(csv_file), key="--csv"
        ) from None
    result = parse_ncu_csv(
        raw,
        path=str(csv_file),
        backend=side.spec.backend,
        params=side.spec.params,
        kernel_name=side.spec.kernel_name,
        strict_kernel=True,
    )
    rel = probe_path(plan.ws.paths, side.spec.backend, side.spec.params).with_suffix(".csv")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(Path(csv_file).stat().st_mtime))
    result = replace(
        result, command=side.shell, captured_at=stamp, csv=rel.relative_to(plan.ws.paths.root).as_posix()
    )
    return result, save_probe(plan.ws.paths, result, raw_csv=raw)


def load(ws: Workspace | KernelSession) -> dict[tuple[str, str], ProbeResult]:
    """Every probe filed under the kernel dir (``workbench/probes/``) as it is now: this service files
    probes, so the session's copy is read again (the rest of the command then shares it)."""
    session = KernelSession.of(ws)
    session.forget("probes")
    return dict(session.probes())


def probe_rows(
    probes: Mapping[tuple[str, str], ProbeResult],
    candidate_backend: str,
    row: RatioRow,
    *,
    compact: bool = False,
) -> list[tuple[str, str, str]]:
    """(metric, candidate, reference) of the filed probes of ``row``; [] when neither side was probed."""
    cand = probe_for(probes, candidate_backend, row.params)
    base = probe_for(probes, row.baseline_backend, row.params)
    if cand is None and base is None:
        return []
    return side_by_side(cand, base, compact=compact)


__all__ = [
    "ProbePlan",
    "ProbeRequest",
    "ProbeSide",
    "cannot_run",
    "file_csv",
    "load",
    "plan_probe",
    "probe_rows",
    "read_only",
    "run_side",
]
