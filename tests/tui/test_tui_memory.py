"""A session that does not fit in memory: a clear message and exit 2, never a traceback (issue 26).

SYNTHETIC: the loader is made to raise MemoryError (what a 10,000-config session did at an 8 GiB limit)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_out_of_memory_while_loading_is_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cutile_workbench.tui import app as app_mod
    from cutile_workbench.tui import loaders

    def too_big(*_a, **_kw):  # type: ignore[no-untyped-def]
        raise MemoryError

    monkeypatch.setattr(loaders, "quick_app_data", too_big)  # the quick first screen's load too
    monkeypatch.setattr(loaders, "load_app_data", too_big)
    rc = app_mod.run_app("matmul", out_root=Path("/nonexistent"), tilegym=None)
    err = capsys.readouterr().err
    assert rc == 2 and "does not fit in memory" in err and "Traceback" not in err
    assert "timeline" in err and "table" in err  # says what still works
