"""Checks screen (mode 5): the TileGym-side checks E and F start with, for the workspace's checkout.

Contract:
- :func:`gather_checks` runs the core checks of ``workbench.tilegym_checks`` in order — E
  precondition (``autotune_launch`` import in a child), ``test_perf`` wiring (collect-only
  ``-k cutile_rs`` count; the proposed edit as a unified diff when it is zero), the ``-k``
  expressions of candidate and baseline with the comparison of the configs they select (static
  ids + pytest's ``-k`` matcher, so no torch is needed) and the static wrapper audit — and
  returns :class:`ChecksResult` rows (:class:`widgets.checks_panel.CheckItem`), each naming its
  CLI twin. It never writes: no BLOCKED files, no test edit. Applying the wiring edit is only
  offered as the CLI twin ``cutile-workbench check <kernel> --apply-wiring`` (the one source edit
  the workbench may make must stay an explicit CLI action). A ``WorkbenchError`` of one step
  becomes an ERROR row naming file/line plus a problem (shown as a notification); the other
  steps still run. ``cancelled()`` is polled between steps and, every 0.1 s, by the child process
  of the precondition and wiring steps: when it fires, that child's process group is killed
  (SIGTERM, SIGKILL after 0.5 s) and the step becomes a CANCELLED row.
- :class:`ChecksScreen` runs it in a thread worker (``r``), shows a loading indicator, cancels
  with ``escape``; ``run`` is disabled via ``check_action`` when the app has no TileGym checkout
  (``AppData.run_checks`` is None, e.g. the recorded session), and the screen says how to point
  at one (``--tilegym DIR`` / ``$TILEGYM_PATH``).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Footer, LoadingIndicator, Static
from textual.worker import Worker, WorkerState, get_current_worker

from widgets.checks_panel import CheckItem, ChecksPanel
from workbench.errors import WorkbenchError
from workbench.tui.screens.base import WorkbenchScreen

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


def _winner(analysis: Any) -> str | None:
    """The baseline backend analysis.json names (``reference_backend`` or the selection's winner)."""
    raw = analysis if isinstance(analysis, Mapping) else getattr(analysis, "raw", {}) or {}
    selection = raw.get("reference_backend_selection")
    winner = raw.get("reference_backend") or (selection.get("winner") if isinstance(selection, Mapping) else None)
    return str(winner) if winner in ("cutile", "triton") else None


def _cancelled_item(section: str) -> CheckItem:
    return CheckItem(section, "CANCELLED", "stopped: the checks were cancelled (its child process was killed)")


def _precondition(kernel: str, root: Path, python: str, env: Mapping[str, str] | None,
                  timeout_s: float, cancelled: Callable[[], bool] | None = None) -> CheckItem:
    from workbench.tilegym_checks.precondition import check_precondition

    cli = _cli(kernel, root, "check")
    pre = check_precondition(root, python=python, env=env, timeout_s=timeout_s, cancelled=cancelled)
    if pre.child.cancelled:
        return _cancelled_item("precondition")
    if pre.ok:
        return CheckItem("precondition", "OK", "tilegym.backend.cutile_rs.autotune_launch imports",
                         detail=f"$ {pre.display_command}   (cwd {root})", cli=cli)
    tail = pre.traceback.splitlines()[-TRACEBACK_TAIL:]
    detail = [f"$ {pre.display_command}   (cwd {root})", f"exit={pre.child.rc}", *tail]
    detail += [f"hint: {h}" for h in pre.hints]
    return CheckItem(
        "precondition", "BLOCKED", f"import failed: {pre.reason}", detail="\n".join(detail),
        action="E stops here (VERDICT: BLOCKED); the CLI twin writes reports/agent_logs/agent_e.md "
               "and SKILL_METHODOLOGY_BLOCKED.txt with --out-root (this screen writes nothing)",
        cli=cli)


def _wiring(kernel: str, root: Path, python: str, env: Mapping[str, str] | None,
            timeout_s: float, cancelled: Callable[[], bool] | None = None) -> list[CheckItem]:
    from workbench.tilegym_checks.wiring import check_wiring

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
        return [CheckItem("wiring", "OK", f"{check.selected} cutile-rs perf case(s) selected",
                          detail=detail, location=check.relpath, cli=cli)]
    items: list[CheckItem] = []
    lines = [command]
    if not collect.ok:
        lines.append("collection problem (pytest output tail):")
        lines += collect.child.output.splitlines()[-10:]
    items.append(CheckItem("wiring", "MISSING" if collect.ok else "ERROR",
                           f"{check.selected} cutile-rs perf cases selected", detail="\n".join(lines),
                           location=check.relpath, cli=cli))
    for status in check.statuses:
        loc = f"{check.relpath}:{status.line}" if status.line else check.relpath
        if status.edit is None:
            items.append(CheckItem("wiring", "INFO" if status.state.startswith("wired") else "BLOCKED",
                                   f"{status.target}: {status.state}: {status.message}", location=loc, cli=cli))
            continue
        edit = status.edit
        items.append(CheckItem(
            "wiring", "MISSING", f"{status.target}: {status.message}",
            location=f"{check.relpath}:{edit.line}",
            action=f"add {edit.literal} to {edit.where} (no tolerance, shape or assertion touched); "
                   "not applied here — run the CLI twin, which keeps a backup, re-collects to prove ≥ 1 "
                   "case and reverts if not",
            diff=edit.diff(check.relpath), cli=_cli(kernel, root, "check", "--apply-wiring")))
    return items


def _kselect(kernel: str, root: Path, analysis: Any, candidate: str) -> list[CheckItem]:
    from workbench.tilegym_checks import kselect
    from workbench.tilegym_checks.static_eval import Assumptions, Unresolvable
    from workbench.tilegym_checks.testfile import load_test_module
    from workbench.tilegym_checks.wiring import find_test_file, perf_targets

    if analysis is None:
        return [CheckItem("kselect", "SKIPPED", "no reference/analysis.json in the out root: the -k expressions "
                          "are built from its test_perf_configs", cli=_cli(kernel, root, "kselect", "--analysis",
                                                                            "ANALYSIS.json", "--show"))]
    baseline = _winner(analysis)
    if baseline is None:
        return [CheckItem("kselect", "ERROR", "analysis.json names no reference backend (cutile or triton)",
                          location="reference/analysis.json: reference_backend",
                          cli=_cli(kernel, root, "kselect", "--baseline", "triton", "--show"))]
    cli = _cli(kernel, root, "kselect", "--show")
    module = load_test_module(find_test_file(root, kernel), root)
    perf = perf_targets(module)
    default_test = module.func_key(perf[0]) if perf else None
    # every backend assumed available: the ids are derived as on a node that has them all
    assumptions = Assumptions(frozenset({"cutile", "cutile-rs", "triton", "pytorch"}))
    cases_by_test: dict[str, Any] = {}
    for fn in module.perf_functions():
        try:
            cases_by_test[module.func_key(fn)] = module.derive_cases(fn, assumptions)
        except Unresolvable:
            continue
    selection = kselect.build_k_expressions(analysis, candidate, baseline, cases_by_test=cases_by_test,
                                            default_test=default_test)
    lines: list[str] = []
    cand_ids: list[str] = []
    base_ids: list[str] = []
    unresolved: list[str] = []
    for label, targets, sink in (("candidate", selection.candidate, cand_ids),
                                 ("baseline", selection.baseline, base_ids)):
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
        return [CheckItem("kselect", "INFO", f"{baseline} baseline; selection not proven statically",
                          detail="\n".join(lines), action="prove it with collect-only (the CLI twin)", cli=cli)]
    diff = kselect.compare_selections(cand_ids, base_ids)
    lines += diff.describe().splitlines()
    if diff.ok:
        return [CheckItem("kselect", "OK", f"both sides select the same {len(diff.common)} config(s) "
                          f"(candidate {candidate} vs baseline {baseline})", detail="\n".join(lines), cli=cli)]
    if not cand_ids and base_ids:
        action = (f"test_perf has no {candidate} case for these configs yet: make the wiring edit above "
                  "(CLI twin), then re-run the checks")
    else:
        action = "make analysis.json's test_perf_configs name configs both sides of test_perf parametrize"
    return [CheckItem("kselect", "REFUSED", "candidate and baseline select different config sets: a run "
                      "would be refused", detail="\n".join(lines), action=action, cli=cli)]


def _audit(kernel: str, root: Path, analysis: Any) -> list[CheckItem]:
    from workbench.tilegym_checks.wrapper_audit import audit_wrapper

    path = root / "src" / "tilegym" / "ops" / "cutile_rs" / f"{kernel}.py"
    cli = _cli(kernel, root, "audit-wrapper")
    if not path.is_file():
        return [CheckItem("audit", "ERROR", "no cutile-rs wrapper to audit", location=_rel(path, root), cli=cli)]
    findings = audit_wrapper(path, analysis)
    if not findings:
        return [CheckItem("audit", "OK", "no wrapper findings", location=_rel(path, root), cli=cli)]
    items = []
    for f in findings:
        d = f.details
        items.append(CheckItem(
            "audit", "FINDING", f"[{d.get('rule', f.kind)}] ({f.confidence}) {f.summary}",
            location=f.evidence[0] if f.evidence else _rel(path, root),
            rule=f"{d.get('rule_text', '')} ({d.get('source', '')})".strip(" ()"),
            action=str(d.get("action", "")), cli=cli))
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
) -> ChecksResult:
    """Run the four checks on ``tilegym`` for ``kernel`` (see the module contract). Writes nothing."""
    from workbench.tilegym_checks.precondition import require_tilegym

    py = python or sys.executable
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
        ("precondition", _cli(kernel, root, "check"),
         lambda: [_precondition(kernel, root, py, env, timeout_s, cancelled)]),
        ("wiring", _cli(kernel, root, "check"), lambda: _wiring(kernel, root, py, env, timeout_s, cancelled)),
        ("kselect", _cli(kernel, root, "kselect", "--show"), lambda: _kselect(kernel, root, analysis, candidate)),
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


NO_TILEGYM = (
    "No TileGym checkout is attached to this session, so the TileGym-side checks cannot run.\n\n"
    "Point the workbench at one:\n"
    "  cutile-workbench {kernel} --tilegym DIR        (the TileGym repository root)\n"
    "  export TILEGYM_PATH=DIR; cutile-workbench {kernel}\n\n"
    "The same checks from the shell:\n"
    "  cutile-workbench check {kernel} --tilegym DIR          E precondition + test_perf wiring\n"
    "  cutile-workbench kselect {kernel} --tilegym DIR --show  -k expressions, both sides compared\n"
    "  cutile-workbench audit-wrapper {kernel} --tilegym DIR   static wrapper audit\n"
)


class ChecksScreen(WorkbenchScreen):
    SCREEN_TITLE = "Checks"
    ABOUT = (
        "The TileGym-side checks E and F start with, on the workspace's TileGym checkout: the E precondition "
        "(tilegym.backend.cutile_rs.autotune_launch must import in a child process), test_perf wiring "
        "(collect-only count of cutile-rs perf cases; when zero, the minimal edit as a diff), the -k "
        "expressions of candidate and baseline with the configs each selects, and the static wrapper audit "
        "(file:line, rule, suggested action). r runs them in the background, Escape cancels. Every row names "
        "its CLI twin. Nothing is written here: the wiring edit is applied only by "
        "`cutile-workbench check <kernel> --apply-wiring`."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "run", "Run checks", tooltip="Run the TileGym checks in the background", id="checks-run"),
        Binding("escape", "cancel", "Cancel", tooltip="Stop waiting for the running checks", id="checks-cancel"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.running = False
        self.result: ChecksResult | None = None
        self._worker: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(id="checks-status")
        yield LoadingIndicator(id="checks-loading", classes="hidden")
        yield ChecksPanel(id="checks")
        yield Footer()

    @property
    def panel(self) -> ChecksPanel:
        return self.query_one(ChecksPanel)

    def on_mount(self) -> None:
        # never run on mount: the app pre-mounts every screen at start-up, and the checks start
        # child processes (up to minutes on a GPU node) — they run when asked (r / palette)
        if self.data.run_checks is None:
            self._status(Text("no TileGym checkout: --tilegym DIR or $TILEGYM_PATH", style="bold yellow"))
            self.panel.show_message(NO_TILEGYM.format(kernel=self.data.kernel))
        else:
            where = str(self.data.tilegym) if self.data.tilegym else "the TileGym checkout"
            self._status(Text(f"TileGym: {where} · r: run the checks (nothing is written)"))
            self.panel.show_message(Text("Not run yet. r runs the E precondition, the test_perf wiring, the -k "
                                         "selection and the wrapper audit."))

    def _status(self, text: Text) -> None:
        self.query_one("#checks-status", Static).update(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "run":
            if self.data.run_checks is None:
                return False
            return None if self.running else True
        if action == "cancel":  # hidden unless a run is in flight (Escape means nothing else here)
            return True if self.running else False
        return True

    def action_run(self) -> None:
        if self.data.run_checks is None or self.running:
            return
        self.running = True
        self.query_one("#checks-loading").remove_class("hidden")
        self._status(Text("running the TileGym checks… (Escape cancels)"))
        self.refresh_bindings()
        self._worker = self.run_checks()

    def action_cancel(self) -> None:
        if not self.running or self._worker is None:
            return
        self._worker.cancel()
        self._finish()
        # the worker's cancelled() now returns True: run_child kills the running child's process
        # group within its 0.1 s poll (SIGKILL 0.5 s later if SIGTERM is ignored)
        self._status(Text("cancelled: the running TileGym child process is being stopped; nothing was written",
                          style="yellow"))
        self.notify("TileGym checks cancelled", timeout=4)

    @work(thread=True, exclusive=True, exit_on_error=False, group="checks", description="TileGym checks")
    def run_checks(self) -> None:
        assert self.data.run_checks is not None
        worker = get_current_worker()
        result = self.data.run_checks(lambda: worker.is_cancelled)
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show, result)

    def _finish(self) -> None:
        self.running = False
        self._worker = None
        self.query_one("#checks-loading").add_class("hidden")
        self.refresh_bindings()

    def _show(self, result: ChecksResult) -> None:
        self._finish()
        self.result = result
        self.panel.show_items(result.items)
        counts: dict[str, int] = {}
        for item in result.items:
            counts[item.status] = counts.get(item.status, 0) + 1
        summary = " · ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        bad = any(i.status in ("BLOCKED", "MISSING", "REFUSED", "ERROR") for i in result.items)
        self._status(Text(f"TileGym checks: {summary}", style="bold red" if bad else "bold green"))
        for problem in result.problems:
            self.notify(str(problem), title=problem.title, severity="error", timeout=30, markup=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "checks" or event.state != WorkerState.ERROR:
            return
        self._finish()
        error = event.worker.error
        self._status(Text(f"the checks failed: {type(error).__name__}: {error}", style="bold red"))
        self.wb.show_error(f"{type(error).__name__}: {error}", "TileGym checks failed")
