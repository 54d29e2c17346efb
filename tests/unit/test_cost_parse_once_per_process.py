"""Issue 31: a fresh `table` parses each perf log once per process (counted, not timed).

The session is bench/scale_cost.py's builder (the real recorded H200 matmul session replicated to N
configs). ``parser._parse`` (the whole-log parse, not e_table's own ``_parse`` wrapper, which a cProfile
listing by name shows as a second ``_parse``) is counted per log file during one in-process
``cli.main(["table", ...])`` with every process memo cleared and a fresh user cache.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import scale_cost  # noqa: E402

N = 8


def _forget_process_memos() -> None:
    from cutile_workbench.artifacts import config_cache, derive_cache, events
    from cutile_workbench.artifacts.perflog import index, parser
    from cutile_workbench.stages.e import e_table

    derive_cache._DERIVED.clear()
    e_table._MEMORY.clear()
    parser._MEMO.clear()
    config_cache.forget()
    getattr(events, "forget", lambda: None)()
    index.forget()


@pytest.mark.parametrize("strict_first", [True, False], ids=["fresh", "after-lenient-read"])
def test_fresh_table_parses_each_perf_log_at_most_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strict_first: bool
) -> None:
    from cutile_workbench.artifacts.perflog import parser
    from cutile_workbench.cli import main

    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "user-cache"))
    _forget_process_memos()
    kdir, _config = scale_cost.build_session(tmp_path / "out", N)
    logs = [kdir / scale_cost.CANDIDATE_LOG, kdir / scale_cost.BASELINE_LOG]
    whole: Counter[str] = Counter()
    real = parser._parse

    def counted(src: str, text: str | None, *a: Any, **kw: Any) -> Any:
        if text is None or 2 * len(text) > Path(src).stat().st_size:  # a whole log, not one block
            whole[Path(src).name] += 1
        return real(src, text, *a, **kw)

    monkeypatch.setattr(parser, "_parse", counted)
    if (
        not strict_first
    ):  # an earlier lenient read cannot answer the strict parse, but `table` still parses once
        for log in logs:
            parser.parse_perf_log(log, strict=False)
        whole.clear()
    with contextlib.redirect_stdout(io.StringIO()):
        rc = main(["--out-root", str(kdir.parent), "table", "matmul", "--json"])
    assert rc in (0, 1)
    assert whole, "the command parsed no log: the count would prove nothing"
    assert set(whole) <= {log.name for log in logs}, dict(whole)
    assert max(whole.values()) == 1, dict(whole)
