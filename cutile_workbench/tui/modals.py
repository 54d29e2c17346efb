"""Modal screens: error (names file/line), confirmation (explicit yes), and F1 help.

Every user string is passed as ``rich.text.Text`` (never markup) — a kernel name or path that
contains ``[`` must not be interpreted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Markdown, Static

from cutile_workbench.errors import WorkbenchError


class ErrorModal(ModalScreen[None]):
    """A blocking error: title + ``file:line: message``; Escape/Enter closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter", "dismiss", "Close", id="error-close")]

    def __init__(self, error: WorkbenchError | str, title: str | None = None) -> None:
        super().__init__()
        self.error_text = str(error)
        self.error_title = title or (error.title if isinstance(error, WorkbenchError) else "Error")

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="error"):
            yield Static(Text(self.error_title, style="bold"), id="title")
            with VerticalScroll(id="body"):
                yield Static(Text(self.error_text), id="message")
            yield Button("Close", id="close", variant="error")

    def on_button_pressed(self) -> None:
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    """An explicit yes/no. Default focus is *No*: Enter alone never writes files."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "answer(False)", "No", id="confirm-no"),
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
    ]

    def __init__(self, title: str, lines: Iterable[str]) -> None:
        super().__init__()
        self.confirm_title = title
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.confirm_title, style="bold"), id="title")
            with VerticalScroll(id="body"):
                yield Static(Text("\n".join(self.lines)), id="message")
            with Horizontal(id="buttons"):
                yield Button("No (n)", id="no", variant="default")
                yield Button("Yes, write (y)", id="yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class InfoModal(ModalScreen[None]):
    """Plain lines in a scrollable box (the header's whole text: ``i``); Escape/Enter/i closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,enter,i,q", "dismiss", "Close", id="info-close")]

    def __init__(self, title: str, lines: Iterable[str]) -> None:
        super().__init__()
        self.info_title = title
        self.lines = list(lines)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.info_title, style="bold"), id="title")
            with VerticalScroll(id="body"):
                yield Static(Text("\n".join(self.lines)), id="message")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """F1: what this screen is for plus every key active on it (generated from the bindings)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,q", "dismiss", "Close", id="help-close")]

    def __init__(self, title: str, about: str, keys: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.help_title = title
        self.about = about
        self.keys = keys

    def compose(self) -> ComposeResult:
        rows = "\n".join(
            f"| `{k.replace('|', '/')}` | {d.replace('|', '/')} | {t.replace('|', '/')} |"
            for k, d, t in self.keys
        )
        md = (
            f"# {self.help_title}\n\n{self.about}\n\n| key | action | what it does |\n|---|---|---|\n{rows}\n"
        )
        with VerticalScroll(id="dialog", classes="help"):
            yield Markdown(md)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
