"""Issue #34 item 6: readable in 16 colours, and the Timeline keeps its ``id REF`` line at 80x24.

The scene is CONSTRUCTED FROM REAL CAPTURES (the recorded matmul session with the candidate given
the baseline's own launch sets: every row REF, as in ``test_tui_trust``). Each warning the screens
draw (the REF mark, the identity line, INVESTIGATE) is taken from the rendered lines with its
resolved colours, brought down to the 16 standard colours the way a 16-colour terminal gets them
(``Color.downgrade(ColorSystem.STANDARD)``, Rich's standard palette) and its WCAG contrast computed:
none may fall below 4.5:1. Before this change the REF mark and the identity line came out magenta
on black (2.2:1), and at 80x24 the Timeline's title wrapped its first line and lost the id line.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from pilot_wait import settle, until
from rich.color import Color, ColorSystem
from rich.color_triplet import ColorTriplet
from rich.terminal_theme import DEFAULT_TERMINAL_THEME
from test_trust_identity import SESSION, _candidate_runs_baseline_captures
from textual.geometry import Region
from textual.widgets import Static

from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data

WARNINGS = ("REF", "INVESTIGATE", "⚠")
MIN_CONTRAST = 4.5  # WCAG AA for text
PALETTE = DEFAULT_TERMINAL_THEME  # its 16 colours are Rich's standard palette (what downgrade picks from)


def _luminance(c: ColorTriplet) -> float:
    def channel(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.red) + 0.7152 * channel(c.green) + 0.0722 * channel(c.blue)


def contrast(a: ColorTriplet, b: ColorTriplet) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _in_16(color: Color | None, *, foreground: bool) -> ColorTriplet:
    if color is None or color.is_default:
        return PALETTE.foreground_color if foreground else PALETTE.background_color
    return color.downgrade(ColorSystem.STANDARD).get_truecolor(PALETTE, foreground=foreground)


def test_contrast_of_known_pairs() -> None:
    black, white = ColorTriplet(0, 0, 0), ColorTriplet(255, 255, 255)
    assert round(contrast(black, white), 1) == 21.0 and contrast(white, white) == 1.0


def _warnings_drawn(app: Any) -> list[tuple[str, str, float]]:
    """(widget, text, contrast in 16 colours) of every drawn segment that carries a warning word."""
    out = []
    for widget in app.screen.query("*"):
        if not widget.display or not widget.size.area:
            continue
        for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height)):
            for seg in strip:
                if seg.style is None or not any(w in seg.text for w in WARNINGS):
                    continue
                fg = _in_16(seg.style.color, foreground=True)
                bg = _in_16(seg.style.bgcolor, foreground=False)
                out.append((type(widget).__name__, seg.text.strip(), contrast(fg, bg)))
    return out


async def test_warnings_are_readable_in_16_colours_and_the_timeline_keeps_the_id_line(tmp_path: Path) -> None:
    shutil.copytree(SESSION / "matmul", tmp_path / "matmul")
    _candidate_runs_baseline_captures(tmp_path / "matmul")  # CONSTRUCTED FROM REAL CAPTURES
    app = make_app(load_app_data("matmul", out_root=tmp_path, tilegym=None, env={}))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        seen = _warnings_drawn(app)
        assert any(text == "REF" for _w, text, _c in seen), seen  # the id column is drawn at 80 cols
        await pilot.press("2")
        await until(pilot, lambda: app.current_mode == "timeline")
        await settle(pilot)
        title = app.screen.query_one("#title", Static)
        drawn = [s.text for s in title.render_lines(Region(0, 0, title.size.width, title.size.height))]
        assert any("id REF" in line for line in drawn), drawn
        seen += _warnings_drawn(app)
        low = [(w, t, round(c, 2)) for w, t, c in seen if c < MIN_CONTRAST]
        assert low == [], low
