"""The TileGym-side checks as a service: precondition, wiring, ``-k`` selection, wrapper audit.

Contract:

- :func:`tilegym_root` is the checkout the checks run on: ``--tilegym``, else ``$TILEGYM_PATH``
  (:func:`cutile_workbench.artifacts.workspace.tilegym_checkout`, as for every command), checked to be a TileGym
  tree (``InputError`` otherwise). :func:`analysis_for` loads ``analysis.json`` (``--analysis``,
  else ``<out-root>/<kernel>/reference/analysis.json``); :func:`reference_winner` is the baseline
  backend it names. :func:`static_cases` derives the perf tests' node ids with ``ast`` (every
  backend assumed available, as on a node that has them all); :func:`wrapper_source` is the
  cutile-rs wrapper's path.
- :func:`gather_checks` runs the four checks in order — E precondition (``autotune_launch``
  import in a child), ``test_perf`` wiring (collect-only ``-k cutile_rs`` count; the proposed edit
  as a unified diff when it is zero), the ``-k`` expressions of candidate and baseline with the
  comparison of the configs they select (static ids + pytest's ``-k`` matcher, so no torch is
  needed) and the static wrapper audit — and returns :class:`ChecksResult` rows
  (:class:`~cutile_workbench.model.CheckItem`), each naming its CLI twin. It never writes: no BLOCKED
  files, no test edit (applying the wiring edit stays the explicit CLI action
  ``cutile-workbench check <kernel> --apply-wiring``). A ``WorkbenchError`` of one step becomes
  an ERROR row naming file/line plus a problem; the other steps still run. ``cancelled()`` is
  polled between steps and, every 0.1 s, by the child process of the precondition and wiring
  steps: when it fires, that child's process group is killed (SIGTERM, SIGKILL after 0.5 s) and
  the step becomes a CANCELLED row.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cutile_workbench.artifacts.layout import KernelPaths as KernelPaths
from cutile_workbench.artifacts.testids import split_nodeid as split_nodeid
from cutile_workbench.artifacts.workspace import tilegym_checkout as tilegym_checkout
from cutile_workbench.checks import childproc as childproc
from cutile_workbench.checks import kselect as kselect
from cutile_workbench.checks import precondition as precondition
from cutile_workbench.checks import wiring as wiring
from cutile_workbench.checks.precondition import check_precondition, require_tilegym
from cutile_workbench.checks.static_eval import Assumptions, Unresolvable
from cutile_workbench.checks.testfile import TestModule, load_test_module
from cutile_workbench.checks.wiring import (
    ApplyResult,
    WiringCheck,
    analyse_wiring,
    apply_wiring,
    check_wiring,
    find_test_file,
    perf_targets,
)
from cutile_workbench.checks.wrapper_audit import audit_wrapper as audit_wrapper
from cutile_workbench.errors import InputError, WorkbenchError
from cutile_workbench.model import CheckItem

#: every backend assumed available: the ids are derived as on a node that has them all
ALL_BACKENDS = Assumptions(frozenset({"cutile", "cutile-rs", "triton", "pytorch"}))


def tilegym_root(explicit: Path | str | None, env: Mapping[str, str] = os.environ) -> Path:
    """The checked TileGym checkout: ``explicit`` (``--tilegym``), else ``$TILEGYM_PATH``; InputError if none."""
    return require_tilegym(tilegym_checkout(explicit, env))


def out_root_of(explicit: Path | str | None, env: Mapping[str, str] = os.environ) -> Path | None:
    value = explicit or env.get("CUTILE_KERNEL_OUT_ROOT")
    return Path(value) if value else None


def analysis_for(kernel: str, *, analysis_path: Path | str | None, out_root: Path | None) -> Any:
    """``analysis.json`` (``analysis_path``, else under ``out_root``), loaded; InputError if absent/malformed."""
    path = analysis_path
    if path is None:
        if out_root is None:
            raise InputError("no analysis.json: pass --analysis PATH or --out-root DIR", key="--analysis")
        path = KernelPaths.under(out_root, kernel).analysis_json
    path = Path(path)
    if not path.is_file():
        raise InputError("analysis.json not found", path=path)
    try:
        from cutile_workbench.artifacts.analysis import load_analysis
    except ImportError:  # the analysis module is another engineer's; the raw JSON is enough here
        return _load_raw_json(path)
    return load_analysis(path)


def _load_raw_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise InputError("top level must be an object", path=path)
    return data


@dataclass(frozen=True)
class SelectionInputs:
    """What ``kselect`` selects from: analysis.json and the candidate backend it pairs with."""

    analysis: Any
    analysis_path: Path
    candidate: str  # record key, e.g. "cutile-rs" (TileGym) or a profile's candidate ("cutile")
    candidate_source: str  # where the candidate came from, for the output


def selection_inputs(
    kernel: str,
    *,
    analysis_path: Path | str | None,
    out_root: Path | str | None,
    candidate: str | None = None,
    env: Mapping[str, str] = os.environ,
) -> SelectionInputs:
    """analysis.json — ``analysis_path``, else the kernel's workspace resolved like every command
    (``out_root`` → ``$CUTILE_KERNEL_OUT_ROOT`` → the recorded session) — and the candidate: the
    given one, else the workspace's ``session.json`` candidate, else the built-in profile's, else
    ``cutile-rs``. InputError when analysis.json is absent or malformed."""
    from cutile_workbench.artifacts.workspace import open_workspace

    if analysis_path is not None:
        path = Path(analysis_path)
        analysis = analysis_for(kernel, analysis_path=path, out_root=None)
        meta: Mapping[str, Any] = {}
    else:
        ws = open_workspace(kernel, out_root=Path(out_root) if out_root else None, env=env)
        path = ws.paths.analysis_json
        if ws.analysis is None:
            raise InputError(
                f"analysis.json not found (source: {ws.source}); pass --analysis PATH or --out-root DIR",
                path=path,
            )
        analysis = ws.analysis
        try:
            meta = ws.session_meta() or {}
        except WorkbenchError:
            meta = {}
    if candidate:
        return SelectionInputs(analysis, path, candidate, "--candidate")
    recorded = meta.get("candidate")
    if isinstance(recorded, str) and recorded:
        return SelectionInputs(analysis, path, recorded, "workbench/session.json")
    from cutile_workbench.profiles import get_profile

    profile = get_profile(kernel)
    if profile is not None:
        return SelectionInputs(analysis, path, profile.candidate, f"the built-in profile {kernel!r}")
    return SelectionInputs(analysis, path, "cutile-rs", "default")


def reference_winner(analysis: Any) -> str | None:
    """The baseline backend analysis.json names (``reference_backend`` or the selection's winner)."""
    raw = analysis if isinstance(analysis, Mapping) else getattr(analysis, "raw", {}) or {}
    selection = raw.get("reference_backend_selection")
    winner = raw.get("reference_backend") or (
        selection.get("winner") if isinstance(selection, Mapping) else None
    )
    return str(winner) if winner in ("cutile", "triton") else None


@dataclass(frozen=True)
class StaticCases:
    """The kernel's test file read with ``ast``, and the node ids of each derivable perf test."""

    module: TestModule
    default_test: str | None  # func key of the first test_perf target
    cases_by_test: dict[str, list[Any]] = field(default_factory=dict)


def static_cases(tilegym: Path, kernel: str) -> StaticCases:
    """Node ids of ``tests/ops/test_<kernel>.py``'s perf tests, derived like pytest (no torch)."""
    module = load_test_module(find_test_file(tilegym, kernel), tilegym)
    perf = perf_targets(module)
    cases: dict[str, list[Any]] = {}
    for fn in module.perf_functions():
        try:
            cases[module.func_key(fn)] = module.derive_cases(fn, ALL_BACKENDS)
        except Unresolvable:
            continue
    return StaticCases(module, module.func_key(perf[0]) if perf else None, cases)


def wrapper_source(tilegym: Path, kernel: str) -> Path:
    return tilegym / "src" / "tilegym" / "ops" / "cutile_rs" / f"{kernel}.py"


def apply_wiring_edits(
    tilegym: Path,
    kernel: str,
    check: WiringCheck,
    *,
    python: str,
    backup_dir: Path | None,
    env: Mapping[str, str],
    timeout_s: float,
) -> Iterator[ApplyResult]:
    """Apply each proposed ``test_perf`` edit of ``check`` in turn (the one source edit the workbench makes).

    Each edit is re-proposed against the current file so a second class sees the first edit;
    ``wiring.apply_wiring`` keeps a backup, re-collects to prove ≥ 1 case and reverts if not.
    Stops after the first edit that was not applied (it is yielded, with its reason).
    """
    test_path = find_test_file(tilegym, kernel)
    targets = [s.target for s in check.statuses]
    for status in check.statuses:
        if status.edit is None:
            continue
        module = load_test_module(test_path, tilegym)
        fresh = analyse_wiring(
            module, module.find(status.target.split("::", 1)[1]), wrapper=wrapper_source(tilegym, kernel)
        )
        if fresh.edit is None:
            continue
        applied = apply_wiring(
            fresh.edit, tilegym, targets, python=python, backup_dir=backup_dir, env=env, timeout_s=timeout_s
        )
        yield applied
        if not applied.applied:
            return


#: the traceback lines shown for a BLOCKED precondition (the CLI twin writes the whole one)
TRACEBACK_TAIL = 12
#: node ids listed per side before "… N more"
MAX_IDS = 8


@dataclass(frozen=True)
class ChecksResult:
    """What :func:`gather_checks` found: rows for the panel, errors for notifications."""

    items: tuple[CheckItem, ...]
    problems: tuple[WorkbenchError, ...] = ()
    cancelled: bool = False
    tilegym: str = ""


def _cli(kernel: str, tilegym: Path, sub: str, *extra: str) -> str:
    return shlex.join(["cutile-workbench", sub, kernel, "--tilegym", str(tilegym), *extra])


def _rel(path: Path | str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _error_item(section: str, error: WorkbenchError, cli: str) -> CheckItem:
    return CheckItem(section, "ERROR", str(error), cli=cli)


def _cancelled_item(section: str) -> CheckItem:
    return CheckItem(
        section, "CANCELLED", "stopped: the checks were cancelled (its child process was killed)"
    )


def _precondition(
    kernel: str,
    root: Path,
    python: str,
    env: Mapping[str, str] | None,
    timeout_s: float,
    cancelled: Callable[[], bool] | None = None,
) -> CheckItem:
    cli = _cli(kernel, root, "check")
    pre = check_precondition(root, python=python, env=env, timeout_s=timeout_s, cancelled=cancelled)
    if pre.child.cancelled:
        return _cancelled_item("precondition")
    if pre.ok:
        return CheckItem(
            "precondition",
            "OK",
            "tilegym.backend.cutile_rs.autotune_launch imports",
            detail=f"$ {pre.display_command}   (cwd {root})",
            cli=cli,
        )
    tail = pre.traceback.splitlines()[-TRACEBACK_TAIL:]
    detail = [f"$ {pre.display_command}   (cwd {root})", f"exit={pre.child.rc}", *tail]
    detail += [f"hint: {h}" for h in pre.hints]
    return CheckItem(
        "precondition",
        "BLOCKED",
        f"import failed: {pre.reason}",
        detail="\n".join(detail),
        action="E stops here (VERDICT: BLOCKED); the CLI twin writes reports/agent_logs/agent_e.md "
        "and SKILL_METHODOLOGY_BLOCKED.txt with --out-root (this screen writes nothing)",
        cli=cli,
    )


def _wiring(
    kernel: str,
    root: Path,
    python: str,
    env: Mapping[str, str] | None,
    timeout_s: float,
    cancelled: Callable[[], bool] | None = None,
) -> list[CheckItem]:
    cli = _cli(kernel, root, "check")
    check = check_wiring(root, kernel, python=python, env=env, timeout_s=timeout_s, cancelled=cancelled)
    collect = check.collect
    assert collect is not None  # collect=True
    if collect.child.cancelled:
        return [_cancelled_item("wiring")]
    command = f"$ {collect.child.command}"
    if check.selected and collect.ok:
        ids = list(check.cutile_rs_cases[:MAX_IDS])
        more = check.selected - len(ids)
        detail = "\n".join([command, *ids, *([f"… {more} more"] if more > 0 else [])])
        return [
            CheckItem(
                "wiring",
                "OK",
                f"{check.selected} cutile-rs perf case(s) selected",
                detail=detail,
                location=check.relpath,
                cli=cli,
            )
        ]
    items: list[CheckItem] = []
    lines = [command]
    if not collect.ok:
        lines.append("collection problem (pytest output tail):")
        lines += collect.child.output.splitlines()[-10:]
    items.append(
        CheckItem(
            "wiring",
            "MISSING" if collect.ok else "ERROR",
            f"{check.selected} cutile-rs perf cases selected",
            detail="\n".join(lines),
            location=check.relpath,
            cli=cli,
        )
    )
    for status in check.statuses:
        loc = f"{check.relpath}:{status.line}" if status.line else check.relpath
        if status.edit is None:
            items.append(
                CheckItem(
                    "wiring",
                    "INFO" if status.state.startswith("wired") else "BLOCKED",
                    f"{status.target}: {status.state}: {status.message}",
                    location=loc,
                    cli=cli,
                )
            )
            continue
        edit = status.edit
        items.append(
            CheckItem(
                "wiring",
                "MISSING",
                f"{status.target}: {status.message}",
                location=f"{check.relpath}:{edit.line}",
                action=f"add {edit.literal} to {edit.where} (no tolerance, shape or assertion touched); "
                "not applied here — run the CLI twin, which keeps a backup, re-collects to prove ≥ 1 "
                "case and reverts if not",
                diff=edit.diff(check.relpath),
                cli=_cli(kernel, root, "check", "--apply-wiring"),
            )
        )
    return items


def _kselect(kernel: str, root: Path, analysis: Any, candidate: str) -> list[CheckItem]:
    if analysis is None:
        return [
            CheckItem(
                "kselect",
                "SKIPPED",
                "no reference/analysis.json in the out root: the -k expressions "
                "are built from its test_perf_configs",
                cli=_cli(kernel, root, "kselect", "--analysis", "ANALYSIS.json", "--show"),
            )
        ]
    baseline = reference_winner(analysis)
    if baseline is None:
        return [
            CheckItem(
                "kselect",
                "ERROR",
                "analysis.json names no reference backend (cutile or triton)",
                location="reference/analysis.json: reference_backend",
                cli=_cli(kernel, root, "kselect", "--baseline", "triton", "--show"),
            )
        ]
    cli = _cli(kernel, root, "kselect", "--show")
    cases = static_cases(root, kernel)
    cases_by_test = cases.cases_by_test
    selection = kselect.build_k_expressions(
        analysis, candidate, baseline, cases_by_test=cases_by_test, default_test=cases.default_test
    )
    lines: list[str] = []
    cand_ids: list[str] = []
    base_ids: list[str] = []
    unresolved: list[str] = []
    for label, targets, sink in (
        ("candidate", selection.candidate, cand_ids),
        ("baseline", selection.baseline, base_ids),
    ):
        for t in targets:
            lines.append(f"{label} ({t.token}): -k {t.expr}")
            if t.test and t.test in cases_by_test:
                picked = kselect.simulate_k([c.nodeid for c in cases_by_test[t.test]], t.expr)
                sink.extend(picked)
                lines += [f"  {n}" for n in picked[:MAX_IDS]]
                if len(picked) > MAX_IDS:
                    lines.append(f"  … {len(picked) - MAX_IDS} more")
            else:
                unresolved.append(t.test or "<no test>")
    lines += [f"note: {n}" for n in selection.notes]
    if unresolved:
        lines.append("ids not derivable statically for: " + ", ".join(sorted(set(unresolved))))
        return [
            CheckItem(
                "kselect",
                "INFO",
                f"{baseline} baseline; selection not proven statically",
                detail="\n".join(lines),
                action="prove it with collect-only (the CLI twin)",
                cli=cli,
            )
        ]
    diff = kselect.compare_selections(cand_ids, base_ids)
    lines += diff.describe().splitlines()
    if diff.ok:
        return [
            CheckItem(
                "kselect",
                "OK",
                f"both sides select the same {len(diff.common)} config(s) "
                f"(candidate {candidate} vs baseline {baseline})",
                detail="\n".join(lines),
                cli=cli,
            )
        ]
    if not cand_ids and base_ids:
        action = (
            f"test_perf has no {candidate} case for these configs yet: make the wiring edit above "
            "(CLI twin), then re-run the checks"
        )
    else:
        action = "make analysis.json's test_perf_configs name configs both sides of test_perf parametrize"
    return [
        CheckItem(
            "kselect",
            "REFUSED",
            "candidate and baseline select different config sets: a run would be refused",
            detail="\n".join(lines),
            action=action,
            cli=cli,
        )
    ]


def _audit(kernel: str, root: Path, analysis: Any) -> list[CheckItem]:
    path = wrapper_source(root, kernel)
    cli = _cli(kernel, root, "audit-wrapper")
    if not path.is_file():
        return [
            CheckItem("audit", "ERROR", "no cutile-rs wrapper to audit", location=_rel(path, root), cli=cli)
        ]
    findings = audit_wrapper(path, analysis)
    if not findings:
        return [CheckItem("audit", "OK", "no wrapper findings", location=_rel(path, root), cli=cli)]
    items = []
    for f in findings:
        d = f.details
        items.append(
            CheckItem(
                "audit",
                "FINDING",
                f"[{d.get('rule', f.kind)}] ({f.confidence}) {f.summary}",
                location=f.evidence[0] if f.evidence else _rel(path, root),
                rule=f"{d.get('rule_text', '')} ({d.get('source', '')})".strip(" ()"),
                action=str(d.get("action", "")),
                cli=cli,
            )
        )
    return items


def gather_checks(
    kernel: str,
    tilegym: Path,
    analysis: Any = None,
    *,
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    candidate: str = "cutile-rs",
    timeout_s: float = 300.0,
    cancelled: Callable[[], bool] = lambda: False,
    out_root: Path | None = None,
) -> ChecksResult:
    """Run the four checks on ``tilegym`` for ``kernel`` (see the module contract). Writes nothing.
    ``out_root``: the out root ``analysis`` came from (None: the default one); every CLI twin names it,
    so that the twin reads the same kernel dir when pasted."""
    result = _gather(
        kernel,
        tilegym,
        analysis,
        py=python or sys.executable,
        env=env,
        candidate=candidate,
        timeout_s=timeout_s,
        cancelled=cancelled,
    )
    if out_root is None:
        return result
    where = " " + shlex.join(["--out-root", str(out_root)])
    items = tuple(replace(i, cli=i.cli + where) if i.cli else i for i in result.items)
    return replace(result, items=items)


def _gather(
    kernel: str,
    tilegym: Path,
    analysis: Any,
    *,
    py: str,
    env: Mapping[str, str] | None,
    candidate: str,
    timeout_s: float,
    cancelled: Callable[[], bool],
) -> ChecksResult:
    # the checks must leave the checkout exactly as they found it: no __pycache__ from the
    # import probe or pytest's collection (pytest's cache is already off: -p no:cacheprovider)
    env = {"PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    items: list[CheckItem] = []
    problems: list[WorkbenchError] = []
    try:
        root = require_tilegym(tilegym)
    except WorkbenchError as e:
        return ChecksResult((CheckItem("precondition", "ERROR", str(e)),), (e,), tilegym=str(tilegym))
    steps: list[tuple[str, str, Callable[[], list[CheckItem]]]] = [
        (
            "precondition",
            _cli(kernel, root, "check"),
            lambda: [_precondition(kernel, root, py, env, timeout_s, cancelled)],
        ),
        ("wiring", _cli(kernel, root, "check"), lambda: _wiring(kernel, root, py, env, timeout_s, cancelled)),
        (
            "kselect",
            _cli(kernel, root, "kselect", "--show"),
            lambda: _kselect(kernel, root, analysis, candidate),
        ),
        ("audit", _cli(kernel, root, "audit-wrapper"), lambda: _audit(kernel, root, analysis)),
    ]
    for section, cli, step in steps:
        if cancelled():
            items.append(CheckItem(section, "CANCELLED", "not run: the checks were cancelled"))
            return ChecksResult(tuple(items), tuple(problems), True, str(root))
        try:
            step_items = step()
        except WorkbenchError as e:
            problems.append(e)
            items.append(_error_item(section, e, cli))
            continue
        items.extend(step_items)
        if any(i.status == "CANCELLED" for i in step_items):
            return ChecksResult(tuple(items), tuple(problems), True, str(root))
    return ChecksResult(tuple(items), tuple(problems), cancelled(), str(root))
