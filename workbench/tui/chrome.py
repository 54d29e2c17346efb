"""The header line every screen shows: kernel, GPU, out root, data source and the screen name."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class WorkbenchHeader(Static):
    """One line; user strings are plain Text (paths may contain markup characters)."""

    def __init__(self, screen_title: str, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.screen_title = screen_title

    def on_mount(self) -> None:
        self.refresh_text()

    def refresh_text(self) -> None:
        data = getattr(self.app, "data", None)
        if data is None:
            self.update(Text(self.screen_title))
            return
        text = Text()
        text.append(f" {self.screen_title} ", style="bold reverse")
        text.append(f" {data.kernel} ", style="bold")
        if data.stand_in:  # never let a stand-in pass for cutile-rs
            text.append(f"STAND-IN: {data.candidate_backend}, not cutile-rs", style="bold black on yellow")
            text.append(" ")
        else:
            text.append("cutile-rs ", style="bold green")
        if getattr(data, "harness", ""):
            text.append(f"│ harness {data.harness} ")
        # most important first: a narrow terminal truncates from the right
        source = "live" if getattr(self.app, "live", False) else data.source
        src_style = {"live": "bold green", "synthetic": "bold yellow"}.get(source, "bold")
        text.append("│ ")
        text.append(source, style=src_style)
        text.append(f" │ {data.gpu} ")
        text.append(f"│ {data.out_root if data.out_root else '(no out root)'}")
        self.update(text)
