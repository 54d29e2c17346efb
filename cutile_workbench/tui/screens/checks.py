"""Checks screen (mode 5): the TileGym-side checks E and F start with, for the workspace's checkout.

Contract: the checks themselves are :func:`cutile_workbench.services.checks.gather_checks` (rows, each
naming its CLI twin; nothing written), bound by the loader as ``AppData.run_checks``.
:class:`ChecksScreen` runs it in a thread worker (``r``), shows a loading indicator, cancels with
``escape``; ``run`` is disabled via ``check_action`` when the app has no TileGym checkout
(``AppData.run_checks`` is None, e.g. the recorded session), and the screen says how to point at
one (``--tilegym DIR`` / ``$TILEGYM_PATH``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import LoadingIndicator, Static
from textual.worker import Worker, WorkerState, get_current_worker

from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.host import PaletteCommand
from cutile_workbench.tui.screens.base import WorkbenchScreen
from cutile_workbench.tui.widgets.checks_panel import ChecksPanel

if TYPE_CHECKING:
    from cutile_workbench.services.checks import ChecksResult
    from cutile_workbench.tui.data import AppData


def no_tilegym_text(data: AppData) -> str:
    """What the Checks screen says without a TileGym checkout: how to attach one, and the same checks
    from the shell; each line names this kernel dir (``AppData.command``), so it runs when pasted."""
    k = data.kernel
    rows = [
        (data.command(k, "--tilegym", "DIR"), "(the TileGym repository root)"),
        ("export TILEGYM_PATH=DIR; " + data.command(k), ""),
    ]
    shell = [
        (data.command("check", k, "--tilegym", "DIR"), "E precondition + test_perf wiring"),
        (data.command("kselect", k, "--tilegym", "DIR", "--show"), "-k expressions, both sides compared"),
        (data.command("audit-wrapper", k, "--tilegym", "DIR"), "static wrapper audit"),
    ]
    width = max(len(c) for c, _w in rows + shell)

    def lines(items: list[tuple[str, str]]) -> list[str]:
        return [f"  {c.ljust(width)}  {w}".rstrip() for c, w in items]

    return (
        "\n".join(
            [
                "No TileGym checkout is attached to this session, so the TileGym-side checks cannot run.",
                "",
                "Point the workbench at one:",
                *lines(rows),
                "",
                "The same checks from the shell:",
                *lines(shell),
            ]
        )
        + "\n"
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
        Binding(
            "r", "run", "Run checks", tooltip="Run the TileGym checks in the background", id="checks-run"
        ),
        Binding(
            "escape", "cancel", "Cancel", tooltip="Stop waiting for the running checks", id="checks-cancel"
        ),
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
        yield WorkbenchFooter()

    @property
    def panel(self) -> ChecksPanel:
        return self.query_one(ChecksPanel)

    def on_mount(self) -> None:
        if self.torn_down():
            return
        # never run on mount: the app pre-mounts every screen at start-up, and the checks start
        # child processes (up to minutes on a GPU node) — they run when asked (r / palette)
        if self.data.run_checks is None:
            self._status(Text("no TileGym checkout: --tilegym DIR or $TILEGYM_PATH", style="bold yellow"))
            self.panel.show_message(no_tilegym_text(self.data))
        else:
            where = str(self.data.tilegym) if self.data.tilegym else "the TileGym checkout"
            self._status(Text(f"TileGym: {where} · r: run the checks (nothing is written)"))
            self.panel.show_message(
                Text(
                    "Not run yet. r runs the E precondition, the test_perf wiring, the -k "
                    "selection and the wrapper audit."
                )
            )

    def _status(self, text: Text) -> None:
        self.query_one("#checks-status", Static).update(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "run":  # always answers (issue #20): runs, or says what is missing
            return None if self.running else True
        if action == "cancel":  # hidden unless a run is in flight (Escape means nothing else here)
            return True if self.running else False
        return True

    def action_run(self) -> None:
        if self.data.run_checks is None:
            self.notify(
                "no TileGym checkout attached: open with --tilegym DIR (or set $TILEGYM_PATH) to run "
                "the checks",
                severity="warning",
                timeout=8,
                markup=False,
            )
            return
        if self.running:
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
        self._status(
            Text(
                "cancelled: the running TileGym child process is being stopped; nothing was written",
                style="yellow",
            )
        )
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

    def palette_commands(self) -> list[PaletteCommand]:
        if self.running:
            return [("checks: cancel", "Stop waiting for the running checks", self.action_cancel)]
        if self.data.run_checks is not None:
            return [
                (
                    "checks: run TileGym checks",
                    str(self.data.tilegym or "the TileGym checkout"),
                    self.action_run,
                )
            ]
        return []
