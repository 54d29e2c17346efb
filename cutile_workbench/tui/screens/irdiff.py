"""IR Diff screen: the structural diff of reference vs generated Tile IR side by side, with the
diff_ir.sh-parity audit beside it. It renders only what the IR service returned (``IRPair``):
hunks in rank order (``n``/``N``), cosmetic hunks folded (``z``), ``/`` search in both panes
(``.``/``,`` next/previous match), audit rows that jump to their hunk."""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Input, Static

from cutile_workbench.tui.chrome import WorkbenchFooter
from cutile_workbench.tui.host import PaletteCommand
from cutile_workbench.tui.screens.base import WorkbenchScreen
from cutile_workbench.tui.widgets.audit_panel import AuditPanel
from cutile_workbench.tui.widgets.ir_diff_view import IRDiffView


class IRDiffScreen(WorkbenchScreen):
    SCREEN_TITLE = "IR Diff"
    ABOUT = (
        "Reference (left) vs generated (right) Tile IR, matched op by op by structure and dataflow "
        "(values named by what defines them), one scroll for both sides. Changed rows are tinted, "
        "changed characters darker. n/N go through the hunks by perf relevance (tile/CTA shape, mma, "
        "loops, memory ops, view vs pointer path, hints, extra loads/stores/casts, then cosmetic); z "
        "folds unchanged lines and cosmetic hunks; / searches both panes (. and , for the next and "
        "previous match). The audit (right) is diff_ir.sh's op table and checks with diff_ir.sh "
        "parity, critical rows first, reference and generated values one under the other; Enter on a "
        "row jumps to its hunk."
    )
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a",
            "toggle_focus",
            "Audit ⇄ diff",
            tooltip="Move focus between the diff and the audit",
            id="irdiff-focus",
        ),
        Binding("p", "next_pair", "Next pair", tooltip="Show the next IR pair (kernel)", id="irdiff-pair"),
        Binding(
            "slash",
            "search",
            "Search",
            tooltip="Search both panes (. / , next / previous match)",
            id="irdiff-search",
        ),
        Binding("escape", "close_search", "Close search", show=False, id="irdiff-search-close"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pair_index = 0

    def compose(self) -> ComposeResult:
        yield self.header()
        yield Static(id="pair-title")
        yield Static(id="hunk-launch", classes="hidden")
        with Horizontal(id="ir-body"):
            yield IRDiffView(id="diff")
            yield AuditPanel(id="audit")
        yield Input(placeholder="search both panes (Enter: go, Esc: close)", id="ir-search", classes="hidden")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        if self.torn_down():
            return
        self.wb.irdiff_screen = self
        self.show_pair(self.selected_pair_index())
        self.query_one(IRDiffView).focus()

    def on_screen_resume(self) -> None:
        # coming back from Ratios with another config highlighted: show that config's recorded pair
        if self.torn_down():
            return
        want = self.selected_pair_index()
        if self.data.ir_pairs and want != self.pair_index and self.data.ir_pairs[want].config is not None:
            self.show_pair(want)

    def selected_pair_index(self) -> int:
        """The pair of the config highlighted on Ratios (its recorded IR), else its variant's, else 0."""
        row = getattr(self.wb, "selected_row", None)
        pairs = self.data.ir_pairs
        if row is None or not pairs:
            return self.pair_index if pairs else 0
        for i, pair in enumerate(pairs):
            if pair.config == row.params:
                return i
        for i, pair in enumerate(pairs):
            if pair.config is None and row.variant and pair.name == row.variant:
                return i
        return self.pair_index

    def show_pair(self, index: int) -> None:
        pairs = self.data.ir_pairs
        view = self.query_one(IRDiffView)
        if not pairs:
            loading = getattr(self.app, "ir_loading", False)
            self.query_one("#pair-title", Static).update(
                Text(
                    "loading IR pairs (parse, structural diff, audit)…"
                    if loading
                    else "no IR pair: needs reference/reference*.mlir and generated/generated*.mlir"
                )
            )
            view.set_rows([])
            self.query_one(AuditPanel).set_items([])
            return
        self.pair_index = index % len(pairs)
        pair = pairs[self.pair_index]
        view.set_rows(pair.rows, pair.lexer, ranked=bool(pair.hunks))
        self.query_one(AuditPanel).set_items(pair.audit)
        self.update_title()

    def update_title(self, hunk: int | None = None) -> None:
        if not self.data.ir_pairs:
            return
        pair = self.data.ir_pairs[self.pair_index]
        view = self.query_one(IRDiffView)
        h = view.current_hunk if hunk is None else hunk
        where = f"hunk {h + 1}/{view.hunk_count}" if h >= 0 else f"{view.hunk_count} hunks"
        if 0 <= h < len(pair.hunks):
            cat, check, _cos = pair.hunks[h]
            where += f" · {cat}" + (f" · audit: {check}" if check else "")
        cos = sum(1 for _c, _k, c in pair.hunks if c)
        crit = sum(1 for a in pair.audit if a.severity == "critical")
        structure = (
            f"structural: {pair.structure}"
            + (f" ({cos} cosmetic{', folded' if view.folded else ''})" if cos else "")
            if pair.structure
            else ""
        )
        title = Text(
            f"{pair.name}: {pair.ref_label} ⇄ {pair.gen_label}  ·  {structure}  ·  {where}  ·  "
            f"diff_ir.sh parity: {pair.verdict or '—'}, {crit} critical"
        )
        for note in pair.structure_notes:
            title.append(f"\n{note}", style="dim")
        launch = self.query_one("#hunk-launch", Static)
        if 0 <= h < len(pair.hunks) and pair.hunks[h][0].startswith(("tile", "mma")) and pair.launch:
            # a shape hunk: what the launches of this config recorded (registers, smem, grid)
            launch.update(Text("launch: " + " · ".join(pair.launch), style="italic"))
            launch.remove_class("hidden")
        else:
            launch.add_class("hidden")
        if pair.how:
            title.append(f"\n{pair.how}", style="dim")
        selected = self.wb.selected_row
        if selected is not None and selected.variant and selected.variant not in pair.name:
            selected = None  # a variant pair of another variant: its config is not the highlighted row's
        ran = self.data.reference_config_line(
            pair.config or (selected.params if selected is not None else None)
        )
        if ran:  # issue 18: the config the reference ran, from its own evidence (same answer as F step 3)
            title.append(f"\n{ran}", style="dim")
        for line in self.data.ignored:  # a malformed analysis.json read on without, as `diff` says it
            title.append(f"\n{line}", style="yellow")
        self.query_one("#pair-title", Static).update(title)

    def on_irdiff_view_hunk_changed(self, event: IRDiffView.HunkChanged) -> None:
        self.update_title(event.hunk)
        if self.data.ir_pairs:
            hunks = self.data.ir_pairs[self.pair_index].hunks
            if 0 <= event.hunk < len(hunks):
                self.query_one(AuditPanel).select_check(hunks[event.hunk][1])

    def on_audit_panel_jump_to(self, event: AuditPanel.JumpTo) -> None:
        view = self.query_one(IRDiffView)
        item = event.item
        found = view.goto_hunk(item.hunk) if item.hunk is not None else False
        if not found:
            found = view.jump_to(left_line=item.ref_line, right_line=item.gen_line)
        if not found:
            self.notify(f"{item.attribute}: no line to jump to", severity="warning")
        view.focus()

    def action_search(self) -> None:
        box = self.query_one("#ir-search", Input)
        box.remove_class("hidden")
        box.value = self.query_one(IRDiffView).search_text
        box.focus()

    def action_close_search(self) -> None:
        box = self.query_one("#ir-search", Input)
        if not box.has_class("hidden"):
            box.add_class("hidden")
            self.query_one(IRDiffView).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "ir-search":
            return
        event.stop()
        view = self.query_one(IRDiffView)
        n = view.search(event.value)
        event.input.add_class("hidden")
        view.focus()
        if event.value:
            self.notify(
                f"{event.value!r}: {n} row(s) hold it (. next, , previous)"
                if n
                else f"{event.value!r}: not found in either pane",
                severity="information" if n else "warning",
            )

    def action_toggle_focus(self) -> None:
        view, audit = self.query_one(IRDiffView), self.query_one(AuditPanel)
        (audit if view.has_focus else view).focus()

    def action_next_pair(self) -> None:
        self.show_pair(self.pair_index + 1)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "next_pair":
            return len(self.data.ir_pairs) > 1
        if action == "close_search":  # nothing open: Escape goes back a level (the app's binding)
            return not self.query_one("#ir-search", Input).has_class("hidden")
        return True

    def palette_commands(self) -> list[PaletteCommand]:
        view = self.query_one("#diff", IRDiffView)
        out: list[PaletteCommand] = []
        if view.hunk_count:
            out += [
                ("ir diff: next hunk", "Jump to the next changed hunk", partial(view.action_hunk, 1)),
                ("ir diff: previous hunk", "Jump to the previous hunk", partial(view.action_hunk, -1)),
            ]
        out.append(("ir diff: fold/unfold unchanged and cosmetic", "Toggle folding", view.action_toggle_fold))
        out.append(
            ("ir diff: search both panes", "Search the reference and generated text", self.action_search)
        )
        if len(self.data.ir_pairs) > 1:
            out.append(("ir diff: next pair", "Show the next IR pair", self.action_next_pair))
        return out
