"""IRDiffView: side-by-side reference vs generated Tile IR (line API), one scroll for both sides.

Contract: fed display rows (:class:`DiffLine`, built by ``cutile_workbench/tui`` from the core IR diff
model) and optionally a Pygments lexer object (``cutile_workbench.ir.lexer.get_lexer()``); never reads
files. Both sides are drawn by one widget so scrolling is synchronized by construction.
Rows may carry hunk numbers in *rank order* (``set_rows(..., ranked=True)``: the structural diff's
perf-relevance order) and a ``cosmetic`` flag; otherwise hunks are numbered by position.
While folded (``z`` toggles), unchanged runs longer than ``2 * context`` and cosmetic hunks fold
into one ``⋯ N unchanged / M cosmetic`` row (:func:`fold_rows`); ``n``/``N`` (or ``]``/``[``) move
to the next/previous hunk in rank order (cosmetic ones skipped while folded); :meth:`goto_hunk`
shows one hunk (scrolled sideways so its first change and the name before it are in view); :meth:`search` (``/`` on the screen) marks a text in both panes and moves to the
next row containing it, ``.``/``,`` to the next/previous one; :meth:`jump_to` puts a given
reference/generated line under the cursor (unfolding as needed). Lines are tokenized lazily and
cached, so a 10k-line pair is ready as soon as its rows are set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, ClassVar, Literal

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

DiffTag = Literal["equal", "replace", "delete", "insert", "fold"]
NUM_W = 6  # line-number column width, incl. one space


@dataclass(frozen=True)
class DiffLine:
    """One side-by-side display row. Spans are (start, end) character ranges that differ."""

    tag: DiffTag
    left_no: int | None
    left: str
    right_no: int | None
    right: str
    left_spans: tuple[tuple[int, int], ...] = ()
    right_spans: tuple[tuple[int, int], ...] = ()
    hunk: int = -1  # index of the hunk a changed row belongs to (rank order when the rows are ranked)
    folded: int = 0  # for tag == "fold": how many rows are hidden
    cosmetic: bool = False  # a changed row of a cosmetic hunk (folded with the unchanged rows)
    category: str = ""  # the hunk's category ("tile/CTA shape", …)
    folded_cosmetic: int = 0  # for tag == "fold": how many of the hidden rows are cosmetic changes


def number_hunks(rows: Sequence[DiffLine]) -> list[DiffLine]:
    """Assign consecutive hunk numbers to maximal runs of changed rows."""
    out: list[DiffLine] = []
    hunk, inside = -1, False
    for r in rows:
        changed = r.tag not in ("equal", "fold")
        if changed and not inside:
            hunk += 1
        inside = changed
        out.append(replace(r, hunk=hunk if changed else -1))
    return out


def fold_rows(rows: Sequence[DiffLine], context: int = 3, *, fold_cosmetic: bool = False) -> list[DiffLine]:
    """Collapse unchanged runs longer than ``2*context`` (keeping ``context`` rows each side); with
    ``fold_cosmetic`` the rows of cosmetic hunks fold with them."""

    def foldable(r: DiffLine) -> bool:
        return r.tag == "equal" or (fold_cosmetic and r.cosmetic)

    out: list[DiffLine] = []
    i, n = 0, len(rows)
    while i < n:
        if not foldable(rows[i]):
            out.append(rows[i])
            i += 1
            continue
        j = i
        while j < n and foldable(rows[j]):
            j += 1
        head = context if i > 0 else 0
        tail = context if j < n else 0
        run = rows[i:j]
        if any(r.tag != "equal" for r in run):
            # cosmetic rows inside: keep up to ``context`` unchanged rows at each edge, fold the rest
            h = 0
            while h < min(head, len(run)) and run[h].tag == "equal":
                h += 1
            t = 0
            while t < min(tail, len(run) - h) and run[len(run) - 1 - t].tag == "equal":
                t += 1
            middle = run[h : len(run) - t]
            out.extend(run[:h])
            cos = sum(1 for r in middle if r.tag != "equal")
            out.append(
                DiffLine(
                    "fold",
                    middle[0].left_no,
                    "",
                    middle[0].right_no,
                    "",
                    folded=len(middle),
                    folded_cosmetic=cos,
                )
            )
            out.extend(run[len(run) - t :])
        # a short run is cheaper to show than a fold row, even at the file edges
        elif j - i > max(head + tail + 1, 2 * context + 1):
            out.extend(rows[i : i + head])
            hidden = j - i - head - tail
            first = rows[i + head]
            out.append(DiffLine("fold", first.left_no, "", first.right_no, "", folded=hidden))
            out.extend(rows[j - tail : j])
        else:
            out.extend(rows[i:j])
        i = j
    return out


# Pygments token type (first component after Token.) -> component class suffix
_TOKEN_CLASS = {
    "Keyword": "keyword",
    "Name": "name",
    "Literal": "number",
    "String": "string",
    "Comment": "comment",
    "Operator": "operator",
    "Punctuation": "punct",
}


class IRDiffView(ScrollView, can_focus=True):
    """Two IR texts side by side with hunk navigation, folding and a cursor row."""

    DEFAULT_CSS = """
    IRDiffView { height: 1fr; background: $surface; }
    IRDiffView > .irdiffview--lineno { color: $text-muted; }
    IRDiffView > .irdiffview--gutter { color: $text-muted; }
    IRDiffView > .irdiffview--removed { background: $error 20%; }
    IRDiffView > .irdiffview--added { background: $success 20%; }
    IRDiffView > .irdiffview--removed-span { background: $error 50%; }
    IRDiffView > .irdiffview--added-span { background: $success 50%; }
    IRDiffView > .irdiffview--fold { color: $text-muted; text-style: italic; }
    IRDiffView > .irdiffview--cursor { text-style: reverse; }
    IRDiffView > .irdiffview--match { text-style: bold underline; background: $warning 40%; }
    IRDiffView > .irdiffview--keyword { color: $accent; text-style: bold; }
    IRDiffView > .irdiffview--name { color: $primary; }
    IRDiffView > .irdiffview--number { color: $warning; }
    IRDiffView > .irdiffview--string { color: $success; }
    IRDiffView > .irdiffview--comment { color: $text-muted; text-style: italic; }
    IRDiffView > .irdiffview--operator { color: $secondary; }
    IRDiffView > .irdiffview--punct { color: $text; }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "irdiffview--lineno",
        "irdiffview--gutter",
        "irdiffview--removed",
        "irdiffview--added",
        "irdiffview--removed-span",
        "irdiffview--added-span",
        "irdiffview--fold",
        "irdiffview--cursor",
        "irdiffview--match",
        *(f"irdiffview--{v}" for v in _TOKEN_CLASS.values()),
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "n,right_square_bracket",
            "hunk(1)",
            "Next hunk",
            tooltip="Jump to the next changed hunk",
            id="irdiff-next-hunk",
        ),
        Binding(
            "N,left_square_bracket",
            "hunk(-1)",
            "Prev hunk",
            tooltip="Jump to the previous hunk",
            id="irdiff-prev-hunk",
        ),
        Binding(
            "z",
            "toggle_fold",
            "Fold",
            tooltip="Fold/unfold unchanged lines and cosmetic hunks",
            id="irdiff-fold",
        ),
        Binding("full_stop", "search_next(1)", "Next match", show=False, id="irdiff-next-match"),
        Binding("comma", "search_next(-1)", "Prev match", show=False, id="irdiff-prev-match"),
        Binding("up,k", "cursor(-1)", "Up", show=False, id="irdiff-up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="irdiff-down"),
        Binding("pageup", "cursor(-20)", "Page up", show=False, id="irdiff-pgup"),
        Binding("pagedown", "cursor(20)", "Page down", show=False, id="irdiff-pgdn"),
        Binding("left,h", "hscroll(-8)", "Left", show=False, id="irdiff-left"),
        Binding("right,l", "hscroll(8)", "Right", show=False, id="irdiff-right"),
    ]

    cursor: reactive[int] = reactive(0, init=False)
    folded: reactive[bool] = reactive(True, init=False)
    hoffset: reactive[int] = reactive(0, init=False)
    #: the row whose change :meth:`show_change` keeps in view (again after a resize)
    _pending_change: DiffLine | None = None

    class HunkChanged(Message):
        def __init__(self, hunk: int, total: int, category: str = "") -> None:
            super().__init__()
            self.hunk = hunk
            self.total = total
            self.category = category

    def __init__(self, *, context: int = 3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.context = context
        self._all: list[DiffLine] = []
        self.rows: list[DiffLine] = []
        self.lexer: Any = None
        self._tok_cache: LRUCache[str, list[tuple[str, str]]] = LRUCache(4096)
        self._strip_cache: LRUCache[tuple[Any, ...], Strip] = LRUCache(512)
        self.hunk_count = 0
        self.cosmetic_hunks: frozenset[int] = frozenset()
        self.search_text = ""
        self._hunk_pos = -1  # the hunk n/N moved to last (rank order)

    # ------------------------------------------------------------------ data
    def set_rows(self, rows: Sequence[DiffLine], lexer: Any = None, *, ranked: bool = False) -> None:
        """Show ``rows``; ``ranked``: their ``hunk`` numbers are already in rank order (kept)."""
        self._all = list(rows) if ranked else number_hunks(rows)
        self.hunk_count = 1 + max((r.hunk for r in self._all), default=-1)
        self.cosmetic_hunks = frozenset(r.hunk for r in self._all if r.cosmetic and r.hunk >= 0)
        self._hunk_pos = -1
        self.lexer = lexer
        self._tok_cache.clear()
        self._apply_fold()
        self.set_reactive(IRDiffView.cursor, 0)
        self.scroll_to(0, 0, animate=False)
        if ranked and self.hunk_count and not (self.folded and 0 in self.cosmetic_hunks):
            self.goto_hunk(0)  # open on the difference that matters most

    def _apply_fold(self) -> None:
        keep = self.rows[self.cursor] if self.rows and self.cursor < len(self.rows) else None
        self.rows = fold_rows(self._all, self.context, fold_cosmetic=True) if self.folded else list(self._all)
        self._strip_cache.clear()
        self.virtual_size = Size(self.size.width, len(self.rows))
        if keep is not None and keep.tag != "fold":
            self.jump_to(left_line=keep.left_no, right_line=keep.right_no)
        self.refresh()

    def watch_folded(self) -> None:
        self._apply_fold()

    def watch_cursor(self, new: int) -> None:
        self.scroll_to_region(Region(0, new, 1, 1), animate=False)
        self.refresh()
        if 0 <= new < len(self.rows) and self.rows[new].hunk >= 0:
            self.post_message(self.HunkChanged(self.rows[new].hunk, self.hunk_count, self.rows[new].category))

    def watch_hoffset(self) -> None:
        self._strip_cache.clear()
        self.refresh()

    def on_resize(self) -> None:
        self._strip_cache.clear()
        self.virtual_size = Size(self.size.width, len(self.rows))
        pending = self._pending_change
        if pending is not None and self.rows and self.rows[min(self.cursor, len(self.rows) - 1)] is pending:
            self.show_change(pending)

    @property
    def current_hunk(self) -> int:
        if not self.rows:
            return -1
        return self.rows[min(self.cursor, len(self.rows) - 1)].hunk

    # ------------------------------------------------------------------ actions
    def action_cursor(self, delta: int) -> None:
        if self.rows:
            self.cursor = min(max(0, self.cursor + delta), len(self.rows) - 1)

    def action_hscroll(self, delta: int) -> None:
        self._pending_change = None  # the user's own sideways scroll is kept over a resize
        self.hoffset = max(0, self.hoffset + delta)

    def action_toggle_fold(self) -> None:
        self.folded = not self.folded

    def action_hunk(self, direction: int) -> None:
        """Move to the first row of the next/previous hunk in rank order (cosmetic hunks skipped
        while folded); bell at either end."""
        here = self.current_hunk
        h = here if here >= 0 else self._hunk_pos
        while True:
            h += direction
            if h < 0 or h >= self.hunk_count:
                self.app.bell()
                return
            if not (self.folded and h in self.cosmetic_hunks):
                break
        self.goto_hunk(h)

    def goto_hunk(self, hunk: int) -> bool:
        """Put the first row of ``hunk`` under the cursor (unfolding when it is folded away)."""
        for i, r in enumerate(self.rows):
            if r.hunk == hunk:
                self._hunk_pos = hunk
                self.cursor = i
                self.show_change(r)
                return True
        if self.folded and any(r.hunk == hunk for r in self._all):
            self.folded = False
            return self.goto_hunk(hunk)
        return False

    def show_change(self, row: DiffLine) -> None:
        """Scroll sideways so that ``row``'s first changed characters and the name before them
        (``num_cta_in_cga = 1`` → ``4`` at column ~370 of an ``entry`` line) are in both panes.
        A resize re-does it while the cursor stays on that row and nothing scrolled sideways
        since (the layout settles after the first placement)."""
        firsts = [spans[0] for spans in (row.left_spans, row.right_spans) if spans]
        self._pending_change = row if firsts else None
        if not firsts or not self.size.width:
            return
        start, end = min(a for a, _b in firsts), max(b for _a, b in firsts)
        text_w = max(1, (self.size.width - 1) // 2 - NUM_W)  # the left pane, the narrower one
        text = row.left if row.left_spans else row.right
        name = re.search(r"[A-Za-z_][\w.]*\W{0,4}$", text[:start])
        lead = start - name.start() if name else 0
        room = max(0, text_w - (end - start) - 1)
        self.hoffset = max(0, start - min(max(lead, min(4, room)), room))

    # ------------------------------------------------------------------ search
    def search(self, text: str) -> int:
        """Mark ``text`` (case-insensitive) in both panes and move to the next row holding it;
        returns how many rows hold it (0: nothing moves)."""
        self.search_text = text
        self._strip_cache.clear()
        self.refresh()
        if not text:
            return 0
        needle = text.lower()
        count = sum(1 for r in self._all if needle in r.left.lower() or needle in r.right.lower())
        if count:
            self.action_search_next(1, wrap=True)
        return count

    def action_search_next(self, direction: int, wrap: bool = True) -> None:
        """Next/previous row (from the cursor, wrapping) holding the search text; unfolds to reach it."""
        needle = self.search_text.lower()
        if not needle or not self._all:
            self.app.bell()
            return
        here = self.rows[self.cursor] if self.rows and self.cursor < len(self.rows) else None
        start = 0
        if here is not None and here.tag != "fold":
            start = next((i for i, r in enumerate(self._all) if r is here), 0)
        n = len(self._all)
        for step in range(1, n + 1):
            k = start + direction * step
            if not wrap and not (0 <= k < n):
                break
            r = self._all[k % n]
            if needle in r.left.lower() or needle in r.right.lower():
                if self.folded and not any(x is r for x in self.rows):
                    self.folded = False
                idx = next((i for i, x in enumerate(self.rows) if x is r), None)
                if idx is not None:
                    self.cursor = idx
                    return
        self.app.bell()

    def _marks(self, text: str) -> tuple[tuple[int, int], ...]:
        if not self.search_text:
            return ()
        low, needle = text.lower(), self.search_text.lower()
        out: list[tuple[int, int]] = []
        k = low.find(needle)
        while k >= 0:
            out.append((k, k + len(needle)))
            k = low.find(needle, k + len(needle))
        return tuple(out)

    def jump_to(self, *, left_line: int | None = None, right_line: int | None = None) -> bool:
        """Put the row showing reference ``left_line`` (else generated ``right_line``) under the cursor."""
        for want, attr in ((left_line, "left_no"), (right_line, "right_no")):
            if want is None:
                continue
            for i, r in enumerate(self.rows):
                if r.tag != "fold" and getattr(r, attr) == want:
                    self.cursor = i
                    return True
            if self.folded and any(getattr(r, attr) == want for r in self._all):
                self.folded = False  # the line is hidden in a fold: unfold, then find it
                return self.jump_to(left_line=left_line, right_line=right_line)
        return False

    # ------------------------------------------------------------------ rendering
    def _cls(self, name: str) -> Style:
        return self.get_component_rich_style(f"irdiffview--{name}")

    def _tokens(self, text: str) -> list[tuple[str, str]]:
        if self.lexer is None:
            return [(text, "")]
        cached = self._tok_cache.get(text)
        if cached is None:
            cached = []
            for ttype, value in self.lexer.get_tokens(text):
                value = value.rstrip("\n")
                if not value:
                    continue
                top = str(ttype).split(".")[1] if "." in str(ttype) else ""
                cached.append((value, _TOKEN_CLASS.get(top, "")))
            self._tok_cache[text] = cached
        return cached

    def _side(
        self,
        no: int | None,
        text: str,
        spans: tuple[tuple[int, int], ...],
        bg: str | None,
        span_bg: str | None,
        width: int,
        base: Style,
    ) -> list[Segment]:
        num = ("" if no is None else str(no)).rjust(NUM_W - 1) + " "
        segs = [Segment(num, base + self._cls("lineno"))]
        line_bg = base + self._cls(bg) if bg else base
        text_w = max(0, width - NUM_W)
        chars: list[Segment] = []
        pos = 0
        text = text.expandtabs(4)
        span_style_extra = self._cls(span_bg) if span_bg and spans else None
        marks = self._marks(text)
        match_style = self._cls("match") if marks else None
        for value, cls in self._tokens(text):
            style = line_bg + self._cls(cls) if cls else line_bg
            if span_style_extra is None and match_style is None:
                chars.append(Segment(value, style))
            else:  # cut the token at span/match edges; changed pieces darker, matches marked
                end = pos + len(value)
                edges = (c for s, e in (*spans, *marks) for c in (s, e) if pos < c < end)
                cuts = sorted({pos, end, *edges})
                for a, b in pairwise(cuts):
                    piece = style
                    if span_style_extra is not None and any(s <= a < e for s, e in spans):
                        piece = piece + span_style_extra
                    if match_style is not None and any(s <= a < e for s, e in marks):
                        piece = piece + match_style
                    chars.append(Segment(value[a - pos : b - pos], piece))
            pos += len(value)
        strip = Strip(chars).crop(self.hoffset, self.hoffset + text_w)
        segs.extend(strip)
        pad = text_w - strip.cell_length
        if pad > 0:
            segs.append(Segment(" " * pad, line_bg))
        return segs

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        row_no = y + int(self.scroll_offset.y)
        if row_no >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        is_cursor = row_no == self.cursor and self.has_focus
        key = (row_no, width, self.hoffset, is_cursor, id(self.rows), self.search_text)
        cached = self._strip_cache.get(key)
        if cached is not None:
            return cached
        r = self.rows[row_no]
        base = self.rich_style
        if r.tag == "fold":
            cos = r.folded_cosmetic
            what = (
                f"{r.folded} unchanged lines"
                if not cos
                else f"{cos} cosmetic changed rows"
                if cos == r.folded
                else f"{r.folded - cos} unchanged lines, {cos} cosmetic changed rows"
            )
            label = f"  ⋯ {what} (z to unfold)"
            style = base + self._cls("fold")
            if is_cursor:
                style = style + self._cls("cursor")
            strip = Strip([Segment(label.ljust(width)[:width], style)], width)
        else:
            half = (width - 1) // 2
            left_bg = "removed" if r.tag in ("replace", "delete") else None
            right_bg = "added" if r.tag in ("replace", "insert") else None
            segs = self._side(
                r.left_no,
                r.left if r.left_no is not None else "",
                r.left_spans,
                left_bg,
                "removed-span",
                half,
                base,
            )
            segs.append(Segment("│", base + self._cls("gutter")))
            segs += self._side(
                r.right_no,
                r.right if r.right_no is not None else "",
                r.right_spans,
                right_bg,
                "added-span",
                width - half - 1,
                base,
            )
            if is_cursor:
                segs[0] = Segment(segs[0].text, (segs[0].style or base) + self._cls("cursor"))
            strip = Strip(segs, width).crop(0, width)
        self._strip_cache[key] = strip
        return strip

    def on_focus(self) -> None:
        self._strip_cache.clear()
        self.refresh()

    def on_blur(self) -> None:
        self._strip_cache.clear()
        self.refresh()
