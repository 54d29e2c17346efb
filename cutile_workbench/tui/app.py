"""WorkbenchApp: six MODES (Ratios, Timeline, IR Diff, Report, Checks, History), global keys, palette, errors.

Contract:
- :func:`make_app` builds the app from an injected :class:`~cutile_workbench.tui.data.AppData` (tests,
  snapshots and the bench use it with recorded or synthetic data); :func:`run_app` is what
  ``cutile-workbench <kernel>`` calls: it loads the workspace (``cutile_workbench.tui.loaders``) and
  returns the process exit code (2 when the workspace itself cannot be opened).
- Keys safe over SSH/tmux (Textual FAQ): 1-6 switch screens, F1 or ? help, Ctrl+P palette,
  Ctrl+Q quits from anywhere (priority); q quits too (asking while a GPU run is live; an input
  with focus takes q and ? as text). Below 100 columns screens get the ``-narrow`` class.
- Escape goes back one level everywhere: what the screen has open first (its own Escape binding:
  filter, search, live run, running checks, a modal), then the screen it was reached from
  (:attr:`WorkbenchApp.trail`), then the overview it was opened from; with none left it does nothing.
- Load problems (``AppData.problems``) become error notifications naming file and line.
- A user keymap (:mod:`cutile_workbench.tui.keymap`, read by :func:`run_app`; ``make_app`` takes it
  injected so tests never see the user's file) is applied with ``App.set_keymap`` at mount; its
  problems are notifications; F1 lists the keys in effect. Ctrl+Q always quits.
- Loading model (issue #34): the first screen paints from ``AppData``; every slower load (IR pairs
  here, the run history and the report plans in their screens) runs in a worker behind a visible
  "loading…" state; a screen is built when first shown (Textual's modes: nothing pre-warmed on the
  UI thread). Keys run in the order typed, against the state they were typed in: one at a time
  (the next goes to the screen once the one before is done and the screen it switched to has been
  shown; :meth:`WorkbenchApp.on_event`), and a screen key takes the config under the cursor of the
  screen it was typed on (:meth:`WorkbenchApp.sync_selection`). Keys held when the app quits are dropped.
- Progressive open (issue 31 item 3): :func:`run_app` paints from ``loaders.quick_app_data`` (every
  row's medians and ratio, the columns still to come marked pending) and the app loads the rest of
  the session (``AppData.full_loader``) in a thread worker after the first frame; keys typed
  meanwhile are held and run, in order, against the whole session once it is in (``q`` and Ctrl+Q
  quit at once); a failed load is stated (notification, the Ratios problems line) and the quick
  rows stay, their pending columns left out.
"""

from __future__ import annotations

import gc
import itertools
import sys
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import AwaitMount, Widget
from textual.worker import Worker, WorkerState

from cutile_workbench.errors import WorkbenchError
from cutile_workbench.model import RatioRow
from cutile_workbench.tui.app_bindings import APP_BINDINGS
from cutile_workbench.tui.commands import WorkbenchCommands
from cutile_workbench.tui.data import AppData, IRPair
from cutile_workbench.tui.screens.base import ScreenShown, WorkbenchScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen

if TYPE_CHECKING:
    from textual.dom import DOMNode
    from textual.screen import Screen

    from cutile_workbench.tui.keymap import LoadedKeymap
    from cutile_workbench.tui.screens.irdiff import IRDiffScreen


def _timeline_screen() -> Screen[None]:
    # The non-initial screens (and the Markdown/ProgressBar widgets they pull in) are imported on
    # first use: ~0.1 s less before the first paint; each is built when it is first shown.
    from cutile_workbench.tui.screens.timeline import TimelineScreen

    return TimelineScreen()


def _irdiff_screen() -> Screen[None]:
    from cutile_workbench.tui.screens.irdiff import IRDiffScreen

    return IRDiffScreen()


def _report_screen() -> Screen[None]:
    from cutile_workbench.tui.screens.report import ReportScreen

    return ReportScreen()


def _checks_screen() -> Screen[None]:
    from cutile_workbench.tui.screens.checks import ChecksScreen

    return ChecksScreen()


def _history_screen() -> Screen[None]:
    from cutile_workbench.tui.screens.history import HistoryScreen

    return HistoryScreen()


class SessionLoaded(Message):
    """Posted from the session-load worker: the whole session's data (issue 31 item 3)."""

    def __init__(self, data: AppData) -> None:
        super().__init__()
        self.data = data


#: keys that act at once while the session loads (every other key waits for it)
QUIT_KEYS = frozenset({"ctrl+q", "ctrl+c", "q"})


class KeyHandled(Message):
    """Posted right behind a key, to the widget the key went to: it takes the key's way up (widget,
    its parents, the screen, the app; each queue keeps its order), so when it reaches the app the
    key is done, every binding it ran included."""

    def __init__(self, serial: int) -> None:
        super().__init__()
        self.serial = serial


MODE_KEYS = {"1": "ratios", "2": "timeline", "3": "irdiff", "4": "report", "5": "checks", "6": "history"}


class WorkbenchApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "cutile-workbench"
    MODES: ClassVar = {
        "ratios": RatiosScreen,
        "timeline": _timeline_screen,
        "irdiff": _irdiff_screen,
        "report": _report_screen,
        "checks": _checks_screen,
        "history": _history_screen,
    }
    COMMANDS = App.COMMANDS | {WorkbenchCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 (Textual's own declaration)
    BINDINGS: ClassVar[list[BindingType]] = APP_BINDINGS

    def __init__(
        self,
        data: AppData,
        *,
        initial_mode: str = "ratios",
        prewarm: bool = True,
        keymap: LoadedKeymap | None = None,
        back_code: int | None = None,
    ) -> None:
        super().__init__()
        #: opened from the overview (``cutile-workbench --out-root DIR``): Escape returns this code to it
        self.back_code = back_code
        self.user_keymap = keymap
        self._reported_clashes: set[frozenset[str]] = set()
        del prewarm  # accepted for callers written before screens were built on first visit
        self.data = data
        self.initial_mode = initial_mode
        self.pending_row: RatioRow | None = None
        #: the config highlighted on the Ratios screen (the IR screen opens on its recorded pair)
        self.selected_row: RatioRow | None = None
        self.pending_live = False
        self.live = False
        self.ir_loading = False
        self.first_paint_at: float | None = None  # perf_counter() of the first displayed frame
        self.irdiff_screen: IRDiffScreen | None = None  # set by the screen when it mounts
        #: the screens the current one was reached from, oldest first (Escape goes back along it)
        self.trail: list[str] = []
        self._going_back = False
        self.sub_title = data.kernel
        # Keys one at a time (issue #34): a key goes to the screen once the one before it is done
        # (its KeyHandled came back) and the screen it switched to has been shown (ScreenShown)
        self._held_keys: deque[events.Key] = deque()
        self._key_serial = itertools.count(1)
        self._key_in_flight: tuple[int, Widget] | None = None
        self._screen_pending = False
        #: the whole session is being loaded behind the quick first screen (AppData.full_loader)
        self.session_loading = data.full_loader is not None

    def on_mount(self) -> None:
        if self.user_keymap is not None:
            self.set_keymap(self.user_keymap.bindings)
            for keymap_problem in self.user_keymap.notifications():
                self.notify(
                    str(keymap_problem),
                    title=keymap_problem.title,
                    severity="error",
                    timeout=30,
                    markup=False,
                )
        # The one gc.freeze (process-wide): the loaded session lives as long as the app, so it
        # leaves the cyclic GC's scans before any screen builds from it (BENCHMARKS §13, A/B).
        if not self.session_loading:  # else once the whole session is in (on_session_loaded)
            self._freeze_session(collect=False)
        self.switch_mode(self.initial_mode)
        self.ir_loading = self.data.ir_loader is not None
        self._notify_problems(told=set())
        if self.data.runner is not None and self.data.source != "synthetic":
            self.notify("a live runner is available: L on a row re-runs it live", timeout=8)

    def on_ready(self) -> None:
        """The first frame is on screen: record it (bench) and start the deferred IR build in a
        worker. Nothing else runs on the UI thread: the other screens are built when first shown
        (Textual's modes), each loading what it needs in its own worker behind a visible state."""
        self.first_paint_at = time.perf_counter()
        if self.session_loading:
            self.load_session()
        elif self.data.ir_loader is not None:
            self.load_ir()

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="session-load",
        description="loading the session",
    )
    def load_session(self) -> None:
        loader = self.data.full_loader
        assert loader is not None
        self.post_message(SessionLoaded(loader()))  # post_message is thread-safe

    async def on_session_loaded(self, message: SessionLoaded) -> None:
        message.stop()
        told = {str(problem) for problem in self.data.problems}  # the quick screen's, notified at mount
        self.data = message.data
        await self._session_ready()
        # The quick screen's widgets and data are garbage now (cycles among widgets): collected,
        # then the whole session frozen as on_mount does for data loaded at once; after the frame
        self.call_after_refresh(self._freeze_session, True)
        self._notify_problems(told)
        self.ir_loading = self.data.ir_loader is not None
        if self.data.ir_loader is not None:
            self.load_ir()

    def _notify_problems(self, told: set[str]) -> None:
        """Each load problem of :attr:`data` as an error notification, but those in ``told`` (the
        quick first screen's, notified at mount, come again with the whole session)."""
        for problem in self.data.problems:
            if str(problem) not in told:
                self.notify(
                    Text(str(problem)).plain, title=problem.title, severity="error", timeout=30, markup=False
                )

    @staticmethod
    def _freeze_session(collect: bool) -> None:
        """The one ``gc.freeze`` (process-wide): the loaded session lives as long as the app, so it
        leaves the cyclic GC's scans (BENCHMARKS §13, A/B); ``collect`` first when a quick first
        screen's widgets and data have just become garbage (frozen, they would never be freed)."""
        if collect:
            gc.collect()
        gc.freeze()

    async def _session_ready(self) -> None:
        """Every screen built so far is built again from :attr:`data`, then the held keys go."""
        self.session_loading = False
        for screen in self.mode_screens().values():
            if isinstance(screen, WorkbenchScreen) and screen.is_attached:
                await screen.data_reloaded()
        await self._release_keys()

    async def _session_failed(self, error: BaseException) -> None:
        """The full load raised: the quick rows stay, their pending columns left out, and why is stated
        where they would be (the Ratios problems line) and as a notification."""
        from dataclasses import replace

        problem = (
            error if isinstance(error, WorkbenchError) else WorkbenchError(f"{type(error).__name__}: {error}")
        )
        what = "CI, identity, SOL, launches and conditions not loaded"
        self.data = replace(
            self.data,
            pending=frozenset(),
            full_loader=None,
            problems=[*self.data.problems, problem],
            narrowed=[*self.data.narrowed, ("ratios", what, problem)],
        )
        self.notify(
            f"{what}: {problem}",
            title="Loading the session failed",
            severity="error",
            timeout=30,
            markup=False,
        )
        await self._session_ready()

    @work(thread=True, exclusive=True, exit_on_error=False, group="ir-load", description="loading IR pairs")
    def load_ir(self) -> None:
        assert self.data.ir_loader is not None
        pairs, problems = self.data.ir_loader()
        self.call_from_thread(self._ir_loaded, pairs, problems)

    def _ir_loaded(self, pairs: list[IRPair], problems: list[WorkbenchError]) -> None:
        self.data.ir_pairs = pairs
        self.ir_loading = False
        for problem in problems:
            self.notify(str(problem), title=problem.title, severity="error", timeout=30, markup=False)
        screen = self.irdiff_screen
        if screen is not None and screen.is_mounted:  # opened while loading: show the pairs now
            screen.show_pair(screen.selected_pair_index())

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "session-load" and event.state == WorkerState.ERROR:
            error = event.worker.error
            await self._session_failed(error if error is not None else RuntimeError("unknown error"))
            return
        if event.worker.group == "ir-load" and event.state == WorkerState.ERROR:
            self.ir_loading = False
            screen = self.irdiff_screen
            if screen is not None and screen.is_mounted:  # "loading…" gives way to "no IR pair"
                screen.show_pair(0)
            self.show_error(f"{type(event.worker.error).__name__}: {event.worker.error}", "Loading IR failed")

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: DOMNode) -> None:
        """A keymap key that replaced another binding of the same widget/screen: say so once."""
        names = frozenset(b.id or b.action for b in clashed_bindings)
        if names in self._reported_clashes:
            return
        self._reported_clashes.add(names)
        where = self.user_keymap.path if self.user_keymap and self.user_keymap.path else "keymap"
        keys = ", ".join(sorted({b.key for b in clashed_bindings}))
        self.notify(
            f"{where}: key {keys} now replaces {', '.join(sorted(names))} on {type(node).__name__}",
            title="Keymap",
            severity="warning",
            timeout=15,
            markup=False,
        )

    @property
    def keys_pending(self) -> int:
        """Keys typed and not yet handed to a screen (the one in flight included)."""
        return len(self._held_keys) + (self._key_in_flight is not None)

    def _keys_wait(self) -> bool:
        flight = self._key_in_flight
        if flight is not None and not flight[1].is_attached:
            self._key_in_flight = flight = None  # removed with the key queued at it: nothing comes back
        return flight is not None or self._screen_pending or self.session_loading

    async def _deliver(self, key: events.Key) -> None:
        """Textual's own handling of a typed key (priority bindings, then the focused widget), with a
        KeyHandled right behind it."""
        target: Widget | None
        try:
            target = self.focused or self.screen
        except Exception:  # no screen yet (a key before the first mount): Textual's own handling
            target = None
        await super().on_event(key)
        if target is not None:
            serial = next(self._key_serial)
            if target.post_message(KeyHandled(serial)):
                self._key_in_flight = (serial, target)

    async def _release_keys(self) -> None:
        if self.return_code is not None:  # quitting (a key before these ran it): they have no screen left
            self._held_keys.clear()
            return
        while self._held_keys and not self._keys_wait():
            await self._deliver(self._held_keys.popleft())

    async def on_key_handled(self, message: KeyHandled) -> None:
        message.stop()
        if self._key_in_flight is not None and self._key_in_flight[0] == message.serial:
            self._key_in_flight = None
            await self._release_keys()

    async def on_screen_shown(self, message: ScreenShown) -> None:
        if message.screen in self.screen_stack:  # (a modal may be on top of it already)
            self._screen_pending = False
            await self._release_keys()

    async def on_idle(self) -> None:
        if self._held_keys:  # a key whose target went away (see _keys_wait): the next one goes now
            await self._release_keys()

    async def on_event(self, event: events.Event) -> None:
        """Keys typed go one at a time (issue #34: keys run in order, against the state they were
        typed in): Textual hands each key to the widget focused when the *app* reads it, so with
        ``6 Esc`` queued both went to Ratios' table and Esc ran against a History screen that had
        not yet taken the selected config. A key is held until the one before it came back
        (:class:`KeyHandled`) and the screen it switched to has been shown (:class:`ScreenShown`).

        Characters typed right after a key that opens an input (``/`` filter, ``/`` search) are
        not lost (issue #20): Textual hands each key to the widget focused when it arrives, and the
        binding moves the focus to the input only when it runs; on a busy machine the next keys
        were already queued at the old widget and came back here unhandled. A printable one that
        comes back while an input has focus goes into it (the input stops the keys it handled
        itself, so none is typed twice)."""
        if isinstance(event, events.Key) and event.is_forwarded and event.is_printable and event.character:
            from textual.widgets import Input

            focused = self.focused
            if isinstance(focused, Input) and focused.display:
                focused.insert_text_at_cursor(event.character)
                return
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self.session_loading and event.key in QUIT_KEYS:
                await self._deliver(event)  # quitting needs nothing of the session
                return
            if self._held_keys or self._keys_wait():
                self._held_keys.append(event)
            else:
                await self._deliver(event)
            return
        await super().on_event(event)

    def mode_screens(self) -> dict[str, Screen[object]]:
        """The screen of every mode shown so far (the global palette offers their commands)."""
        out: dict[str, Screen[object]] = {}
        for mode in self.MODES:
            try:
                stack = self.get_screen_stack(mode)
            except KeyError:  # never shown: built on first visit
                continue
            if stack:
                out[mode] = stack[0]
        return out

    # ------------------------------------------------------------------ actions
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "go_back":  # hidden (and the key does nothing) with no level left to go back to
            return bool(self.trail) or self.back_code is not None
        return True

    def switch_mode(self, mode: str) -> AwaitMount:
        """Every screen switch (1-6, t/Enter, the palette) extends :attr:`trail`; a screen already on
        the trail cuts it there (``1 2 1`` leaves nothing to go back to, k9s' breadcrumbs)."""
        current = self.current_mode
        if not self._going_back and current in self.MODES and current != mode:
            if mode in self.trail:
                del self.trail[self.trail.index(mode) :]
            else:
                self.trail.append(current)
        await_mount = super().switch_mode(mode)
        if current != mode and isinstance(self.screen, WorkbenchScreen):
            self._screen_pending = True  # the next key waits for it to be shown (ScreenShown)
        return await_mount

    def gpu_run_live(self) -> bool:
        """A live or sharded GPU run is going on (its worker is running)."""
        return any(w.group in ("live", "sharded") and w.is_running for w in self.workers)

    def action_quit_asking(self) -> None:
        """``q`` (k9s, lazygit, htop): quits, asking first while a GPU run is live (Ctrl+Q never asks)."""
        if not self.gpu_run_live():
            self.exit(0)
            return
        from cutile_workbench.tui.modals import ConfirmModal

        lines = ["A GPU run is going on: quitting cancels it (nothing of it is merged).", "Quit?"]
        self.push_screen(ConfirmModal("Quit", lines), lambda yes: self.exit(0) if yes else None)

    def action_go_back(self) -> None:
        """Escape, once the screen has nothing of its own open (filter, search, live run, checks: their
        Escape bindings come first): the screen this one was reached from, else the overview."""
        if self.trail:
            self.sync_selection()  # like a screen key: the config under this screen's cursor goes along
            self._going_back = True
            try:
                self.switch_mode(self.trail.pop())
            finally:
                self._going_back = False
        elif self.back_code is not None:
            self.exit(self.back_code)

    def action_mode(self, mode: str) -> None:
        """Switch screens, taking the config along: the one under the cursor of the screen the key
        was typed on (Ratios' row, History's config) *now*, not the last one a highlight message
        reported — ``↓↓↓3`` typed quickly opens the row the three moves reached."""
        self.sync_selection()
        self.switch_mode(mode)

    def sync_selection(self) -> None:
        """``selected_row`` := the config the current screen has under its cursor (if it has one)."""
        screen = self.screen
        if isinstance(screen, WorkbenchScreen):
            row = screen.selected_config()
            if row is not None:
                self.selected_row = row

    def action_help(self) -> None:
        screen = self.screen
        if isinstance(screen, WorkbenchScreen):
            keys = screen.help_keys()
            from cutile_workbench.tui.modals import HelpScreen

            about = screen.ABOUT
            if self.user_keymap is not None and self.user_keymap.path is not None:
                # the keys below are already the remapped ones (active bindings); say where they came from
                about += (
                    f"\n\nKeymap: {self.user_keymap.path} ({len(self.user_keymap.bindings)} binding(s) "
                    "remapped; Ctrl+Q always quits)."
                )
            self.push_screen(HelpScreen(f"{screen.SCREEN_TITLE} — help", about, keys))

    def action_info(self) -> None:
        """The header's full text (a narrow terminal cuts it with "…") and the ratios' conditions."""
        from cutile_workbench.tui.chrome import header_lines
        from cutile_workbench.tui.modals import InfoModal

        self.push_screen(InfoModal("Session", header_lines(self)))

    def open_timeline(self, row: RatioRow, *, live: bool = False) -> None:
        """Show ``row``'s launches on the Timeline screen (optionally starting a live run)."""
        self.pending_row = row
        self.pending_live = live
        if self.current_mode == "timeline":
            screen = self.screen
            from cutile_workbench.tui.screens.timeline import TimelineScreen

            if isinstance(screen, TimelineScreen):
                screen.show_row(row, live=live)
            return
        self.switch_mode("timeline")

    def show_error(self, error: WorkbenchError | str, title: str | None = None) -> None:
        from cutile_workbench.tui.modals import ErrorModal

        self.push_screen(ErrorModal(error, title))


def make_app(
    data: AppData,
    *,
    initial_mode: str = "ratios",
    prewarm: bool = True,
    keymap: LoadedKeymap | None = None,
    back_code: int | None = None,
) -> WorkbenchApp:
    """Factory with injected data sources (tests, snapshots, bench) and an optional user keymap;
    ``back_code``: opened from the overview, Escape with no level left (nothing to close, no screen
    to go back to) exits with it.
    ``prewarm`` is accepted and has no effect (issue #34: no screen is built before its first visit)."""
    return WorkbenchApp(data, initial_mode=initial_mode, prewarm=prewarm, keymap=keymap, back_code=back_code)


def run_app(
    kernel: str,
    *,
    out_root: Path | None,
    tilegym: Path | None,
    keymap: Path | None = None,
    gpus: str | None = None,
) -> int:
    """Load the workspace and run the app; returns the exit code for ``cutile-workbench <kernel>``.

    ``keymap`` is ``--keymap FILE``; without it ``$CUTILE_WORKBENCH_KEYMAP`` or the default file is read.
    ``gpus`` is ``--gpus``: the GPU slots of the sharded re-run (``R`` on Ratios; a bad one exits 2)."""
    from cutile_workbench.tui.keymap import load_keymap
    from cutile_workbench.tui.loaders import load_app_data, quick_app_data

    try:
        # the ratios first (medians and ratios), the rest in a worker after the first frame (issue 31)
        data = quick_app_data(kernel, out_root=out_root, tilegym=tilegym, gpus=gpus) or load_app_data(
            kernel, out_root=out_root, tilegym=tilegym, gpus=gpus
        )
    except WorkbenchError as e:
        print(f"cutile-workbench: {e}", file=sys.stderr)
        return e.exit_code
    except MemoryError:
        gc.collect()
        from cutile_workbench.services.session import command_line

        # the same kernel dir as asked: its out root and checkout named (issue 36: advice runs when pasted)
        where = (("--out-root", str(out_root)) if out_root else ()) + (
            ("--tilegym", str(tilegym)) if tilegym else ()
        )
        table, timeline, history = (
            command_line(*words, locator=where)
            for words in (
                ("table", kernel),
                ("timeline", kernel, "--config", "PARAMS"),
                ("history", kernel, "--config", "PARAMS"),
            )
        )
        print(
            f"cutile-workbench: the session of {kernel!r} does not fit in memory (a memory limit on this "
            "shell?); nothing was opened. What reads one config at a time still works: "
            f"`{table}`, `{timeline}`, `{history}`.",
            file=sys.stderr,
        )
        return 2
    from cutile_workbench.tui.catalog import known_bindings

    rc = make_app(data, keymap=load_keymap(keymap, known=known_bindings)).run()
    return int(rc or 0)
