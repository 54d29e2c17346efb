"""Issue 31 (w5-fresh): events.jsonl is parsed once per process per command (counted, not timed).

A fresh `table` read the events file twice (the autotune winners for pinning, the history importer's
run context), ~9 % of its CPU at 1,000 configs; each line is parsed at most once now, and a file changed
in place is parsed again (the memo is keyed on the file's identity and stat, not its name alone)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "unit"))

from test_cost_counts import _cli, _forget_process_memos, session  # noqa: E402,F401


def _count_line_parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    from cutile_workbench.artifacts import events

    seen: Counter[str] = Counter()
    real = events._parse_line

    def parse_line(line: str, src: str, lineno: int) -> Any:
        seen[f"{Path(src).name}:{lineno}"] += 1
        return real(line, src, lineno)

    monkeypatch.setattr(events, "_parse_line", parse_line)
    return seen


def test_table_parses_each_event_line_once(
    session: tuple[Path, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kdir, _ = session
    seen = _count_line_parses(monkeypatch)
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    assert seen, "the command parsed no event: the count would prove nothing"
    assert max(seen.values()) == 1, seen.most_common(3)


def test_events_changed_in_place_are_parsed_again(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.events import read_events

    p = tmp_path / "events.jsonl"
    p.write_text('{"event": "note", "ts": 1.0}\n')
    first = read_events(p, allow_truncated_tail=True)
    p.write_text('{"event": "note", "ts": 1.0}\n{"event": "note", "ts": 2.0}\n')
    second = read_events(p, allow_truncated_tail=True)
    assert len(first) == 1 and len(second) == 2
    second.clear()  # a caller's list is its own: the memo is not changed through it
    assert len(read_events(p, allow_truncated_tail=True)) == 2
