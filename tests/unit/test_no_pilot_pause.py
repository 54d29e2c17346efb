"""Issue #35 item 1: no test waits for a fixed pause; every TUI test waits for the state it asserts.

``pilot.pause()`` (with or without a delay) sleeps until the process looks idle or a time passes, so
its outcome depends on the box's speed. This scan reads every ``.py`` under ``tests/`` and fails
naming each ``pilot.pause(`` call left outside ``tests/tui/pilot_wait.py`` (the helpers, which say
why they do not use it) and outside ``ALLOWED``: the places where a pause IS the behaviour under
test (each entry says why; none so far). Comments and docstrings are skipped: only code lines count.

The conversion (issue #35 item 1) is done: no file holds a call any more (the shrink-only baseline
that tracked it, file by file, came down to empty in session 7 and was removed).
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
HELPERS = TESTS / "tui" / "pilot_wait.py"
CALL = re.compile(r"\bpilot\s*\.\s*pause\s*\(")

# path relative to tests/ -> why a pause is the behaviour under test there
ALLOWED: dict[str, str] = {}

# path relative to tests/ -> calls still to convert (shrink only; delete the entry at 0)
def code_calls(text: str) -> list[int]:
    """Line numbers of ``pilot.pause(`` in code (not in comments or strings)."""
    lines: list[int] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return [n for n, line in enumerate(text.splitlines(), 1) if CALL.search(line.split("#")[0])]
    names = [t for t in tokens if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    for a, dot, b, paren in zip(names, names[1:], names[2:], names[3:], strict=False):
        if (a.string, dot.string, b.string, paren.string) == ("pilot", ".", "pause", "("):
            lines.append(a.start[0])
    return lines


def test_code_calls_sees_calls_and_skips_comments_and_strings() -> None:
    text = 'await pilot.pause()\n# await pilot.pause()\nx = "pilot.pause()"\nawait pilot . pause(0.1)\n'
    assert code_calls(text) == [1, 4]


def test_no_plain_pilot_pause_outside_the_helpers() -> None:
    left: list[str] = []
    for path in sorted(TESTS.rglob("*.py")):
        if path == HELPERS or ".fetched" in path.parts:
            continue
        rel = path.relative_to(TESTS).as_posix()
        if rel in ALLOWED:
            continue
        calls = code_calls(path.read_text(encoding="utf-8", errors="replace"))
        left += [f"{rel}:{n}" for n in calls]
    assert not left, (
        f"{len(left)} pilot.pause( calls wait for time, not state (use pilot_wait.until/settle):\n"
        + "\n".join(left)
    )


def test_allow_list_names_files_that_exist() -> None:
    missing = [rel for rel in ALLOWED if not (TESTS / rel).is_file()]
    assert not missing, f"allow-list names files that are gone: {missing}"
