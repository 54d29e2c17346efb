"""The overview of an out root (issue 23 A): core readers, the service, the CLI and the TUI's first screen.

Data: copies of the REAL recorded sessions (matmul and silu_and_mul: real cutile-rs vs cuTile on
an H200; rms_norm: a labelled cuTile stand-in) plus two SYNTHETIC broken dirs (a garbage candidate
log; an empty ``reports/``), each labelled where it is built.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from pilot_wait import drain, until

from cutile_workbench.cli import main
from cutile_workbench.services.overview import overview
from cutile_workbench.stages.e.overview import geomean_strip, kernel_dirs, read_performance_md, sort_rows

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = {
    "matmul": ROOT / "cutile_workbench/profiles/tilegym/session/matmul",
    "silu_and_mul": ROOT / "cutile_workbench/profiles/tilegym/session/silu_and_mul",
    "rms_norm": ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm",
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))


def make_root(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    root.mkdir(parents=True)
    for name, src in SESSIONS.items():
        shutil.copytree(src, root / name)
    # SYNTHETIC broken dirs: a candidate log that is not a perf log, and a half-written dir
    (root / "broken").mkdir()
    (root / "broken" / "perf_cutile_rs.txt").write_text("garbage\n")
    (root / "half" / "reports").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "notes.txt").write_text("not a kernel\n")
    return root


def write_e(root: Path, kernel: str) -> None:
    assert main(["report", "e", kernel, "--out-root", str(root), "--yes"]) == 0


def test_kernel_dirs_skip_hidden_files_and_plain_dirs(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "empty").mkdir()
    assert [p.name for p in kernel_dirs(root)] == ["broken", "half", "matmul", "rms_norm", "silu_and_mul"]


def test_rows_from_the_logs_match_e_table(tmp_path: Path) -> None:
    ov = overview(make_root(tmp_path))
    rows = {r.kernel: r for r in ov.rows}
    mm = rows["matmul"]
    assert (mm.e_source, mm.e_verdict, mm.geomean, mm.severity) == (
        "logs",
        "INVESTIGATE",
        1.3758,
        "MODERATE_GAP",
    )
    assert mm.worst_config == "True-True-False-False-2048-2048-2048-0-0-torch.float16"
    assert mm.worst_ratio == pytest.approx(2.04, abs=0.005)
    assert (mm.configs, mm.matched, mm.missing) == (6, 6, 0)
    assert mm.candidate == "cutile-rs" and not mm.stand_in
    assert mm.last_run is not None and mm.last_run.startswith("2026-12-01")
    assert rows["silu_and_mul"].e_verdict == "DONE" and rows["silu_and_mul"].in_band
    assert rows["rms_norm"].stand_in and rows["rms_norm"].candidate == "cutile"
    assert mm.identity == "all 6 rows ran cutile-rs's own kernels (captured symbols)"
    assert rows["broken"].problem and "perf_cutile_rs.txt" in rows["broken"].problem
    assert rows["half"].problem and "no candidate perf log" in rows["half"].problem
    # geomean (worst first), broken rows last
    assert [r.kernel for r in ov.rows][:3] == ["matmul", "rms_norm", "silu_and_mul"]
    assert ov.per_severity["MODERATE_GAP"] == 2 and ov.per_severity["DONE"] == 1 and ov.broken == 2


def test_current_performance_md_is_read_and_a_stale_one_is_not(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    write_e(root, "matmul")
    row = next(r for r in overview(root).rows if r.kernel == "matmul")
    assert row.e_source == "performance.md" and row.geomean == 1.3758 and row.e_verdict == "INVESTIGATE"
    assert row.worst_ratio == 2.04 and (row.configs, row.matched, row.missing) == (6, 6, 0)
    assert row.identity == "all 6 rows ran cutile-rs's own kernels (captured symbols)"
    # a re-run after the report: the candidate log is newer → computed from the logs, and said so
    log = root / "matmul" / "reports" / "agent_logs" / "perf_cutile_rs.full.txt"
    later = time.time() + 60
    os.utime(log, (later, later))
    row = next(r for r in overview(root).rows if r.kernel == "matmul")
    assert row.e_source == "logs (performance.md stale)" and row.geomean == 1.3758


def test_f_verdicts_are_listed_per_scope(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    reports = root / "matmul" / "reports"
    (reports / "perf_investigation_all_shapes.md").write_text("VERDICT: FIXABLE\n\nbody\n")  # synthetic
    (reports / "perf_investigation_2048.md").write_text("not a verdict\n")
    row = next(r for r in overview(root).rows if r.kernel == "matmul")
    assert row.f_verdicts == {"2048": "?", "all_shapes": "FIXABLE"}


def test_read_performance_md_refuses_what_e_did_not_write() -> None:
    assert read_performance_md("") is None
    assert read_performance_md("VERDICT: DONE\ngeomean_ratio=1.0\ngeomean_ratio=1.1\n") is None
    assert read_performance_md("VERDICT: BLOCKED\ngeomean_ratio=1.0\n") is None
    s = read_performance_md("VERDICT: DONE\n\ngeomean_ratio=0.9874\nSeverity: DONE\n")
    assert s is not None and (s.verdict, s.geomean, s.severity, s.worst_config) == (
        "DONE",
        0.9874,
        "DONE",
        None,
    )


def test_sort_orders_and_strip(tmp_path: Path) -> None:
    ov = overview(make_root(tmp_path))
    assert [r.kernel for r in sort_rows(ov.rows, "kernel")] == sorted(r.kernel for r in ov.rows)
    assert sort_rows(ov.rows, "severity")[0].severity == "MODERATE_GAP"
    strip = geomean_strip(ov)
    assert "1.05" in strip[0]
    line = next(s for s in strip if s.startswith("matmul"))
    assert line.endswith("1.3758  over") and "┃" in line
    assert next(s for s in strip if s.startswith("silu_and_mul")).endswith("0.9874")


def test_cli_json_is_versioned_and_csv_has_a_row_per_kernel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_root(tmp_path)
    assert main(["overview", "--out-root", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["totals"]["kernels"] == 5 and doc["totals"]["broken"] == 2
    assert {k["kernel"] for k in doc["kernels"]} == {"matmul", "silu_and_mul", "rms_norm", "broken", "half"}
    assert {
        "e_source",
        "geomean",
        "worst_config",
        "f_verdicts",
        "stand_in",
        "identity",
        "comparability",
        "last_run",
        "regression",
        "in_band",
        "problem",
    } <= set(doc["kernels"][0])
    assert main(["--out-root", str(root), "overview", "--csv", "--sort", "kernel"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("kernel,problem,e_source") and [ln.split(",")[0] for ln in lines[1:]] == [
        "broken",
        "half",
        "matmul",
        "rms_norm",
        "silu_and_mul",
    ]
    assert main(["overview", "--out-root", str(root)]) == 0
    text = capsys.readouterr().out
    assert "BROKEN broken:" in text and "STAND-IN cutile" in text and "geomean of geomeans" in text


def test_cli_without_out_root_or_with_a_missing_one_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    assert main(["overview"]) == 2
    assert "--out-root" in capsys.readouterr().err
    assert main(["overview", "--out-root", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


def test_overview_writes_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    before = sorted((p.relative_to(root), p.stat().st_mtime_ns) for p in root.rglob("*"))
    overview(root)
    assert sorted((p.relative_to(root), p.stat().st_mtime_ns) for p in root.rglob("*")) == before


async def test_tui_sort_filter_open_and_broken_row(tmp_path: Path) -> None:
    from cutile_workbench.tui.overview_app import OverviewApp
    from cutile_workbench.tui.widgets.overview_table import OverviewTable

    app = OverviewApp(overview(make_root(tmp_path)))
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(OverviewTable)
        assert table.row_count == 5 and table.selected_kernel() == "matmul"
        await pilot.press("s")
        assert app.sort == "kernel" and table.selected_kernel() == "broken"
        await pilot.press("enter")  # a broken dir answers with why, and stays
        await until(
            pilot,
            lambda: any("cannot open" in (n.title or "") for n in app._notifications),
            "the broken dir's notification",
        )
        assert app.is_running and any("cannot open" in (n.title or "") for n in app._notifications)
        await pilot.press("slash", *"stand-in", "enter")
        assert table.row_count == 1 and table.selected_kernel() == "rms_norm"
        await pilot.press("escape")
        assert table.row_count == 5
        await pilot.press("down", "down", "enter")
    assert app.return_value == "matmul"


async def test_escape_on_ratios_goes_back_only_when_opened_from_the_overview(tmp_path: Path) -> None:
    from cutile_workbench.tui.app import make_app
    from cutile_workbench.tui.loaders import load_app_data
    from cutile_workbench.tui.overview_app import BACK_TO_OVERVIEW

    root = make_root(tmp_path)
    data = load_app_data("matmul", out_root=root, tilegym=None, env={})
    app = make_app(data, prewarm=False, back_code=BACK_TO_OVERVIEW)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.current_mode == "ratios", "the Ratios screen shown")
        await pilot.press("slash", *"8192", "enter")  # a filter: the first Escape clears it
        await pilot.press("escape")
        await drain(pilot)  # the Escape handled: an exit it asked for would have begun
        assert app.is_running
        await pilot.press("escape")
    assert app.return_value == BACK_TO_OVERVIEW
    plain = make_app(load_app_data("matmul", out_root=root, tilegym=None, env={}), prewarm=False)
    async with plain.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: plain.current_mode == "ratios", "the Ratios screen shown")
        await pilot.press("escape")
        await drain(pilot)  # the Escape handled: an exit it asked for would have begun
        assert plain.is_running


def test_regression_since_the_previous_run_is_read_from_the_history_store(tmp_path: Path) -> None:
    from history_helpers import matmul_with_followups

    root = tmp_path / "out"
    paths = matmul_with_followups(root)  # the REAL session + two SYNTHETIC follow-up runs (1.12x slower last)
    store = paths.workbench_dir / "history.sqlite"
    before = store.stat().st_mtime_ns
    row = next(r for r in overview(root).rows if r.kernel == "matmul")
    assert row.regression == "1 config(s) regressed"
    assert store.stat().st_mtime_ns == before  # read, never imported into
    assert (
        next(r for r in overview(make_root(tmp_path / "b")).rows if r.kernel == "matmul").regression
        == "no history"
    )


def test_rows_are_cached_until_an_input_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import cutile_workbench.services.overview as service

    root = make_root(tmp_path)
    first = overview(root)
    calls: list[str] = []
    real = service.kernel_row
    monkeypatch.setattr(service, "kernel_row", lambda r, k, **kw: calls.append(k.name) or real(r, k, **kw))
    assert overview(root) == first and calls == []  # every row from the cache (broken ones too: same files)
    calls.clear()
    log = root / "silu_and_mul" / "baseline_perf_cutile.txt"
    log.write_text(log.read_text().replace("64-1024-512", "64-1024-513", 1))
    overview(root)
    assert "silu_and_mul" in calls and "matmul" not in calls
    calls.clear()
    overview(root, cache=False)
    assert sorted(calls) == ["broken", "half", "matmul", "rms_norm", "silu_and_mul"]


def test_a_candidate_that_runs_the_reference_kernel_is_flagged(tmp_path: Path) -> None:
    root = tmp_path / "out"
    # the REAL rms_norm_hotpath stand-in session: its "candidate" launches the reference's own cuTile kernel
    shutil.copytree(
        ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm_hotpath", root / "rms_norm_hotpath"
    )
    (row,) = overview(root).rows
    assert row.identity_mark == "CHECK" and row.identity is not None and "REFERENCE's kernel" in row.identity
    assert row.stand_in


def test_the_row_cache_is_keyed_on_content_and_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SYNTHETIC edits of the REAL sessions (issue 33 §7): a same-size, same-mtime edit of
    performance.md and any edit of events.jsonl recompute the row; an edited cache file is a miss."""
    import cutile_workbench.services.overview as service

    root = make_root(tmp_path)
    write_e(root, "matmul")
    overview(root)
    calls: list[str] = []
    real = service.kernel_row
    monkeypatch.setattr(service, "kernel_row", lambda r, k, **kw: calls.append(k.name) or real(r, k, **kw))
    perf = root / "matmul" / "reports" / "performance.md"
    st = perf.stat()
    text = perf.read_text()
    i = next(i for i, ch in enumerate(text) if ch.isdigit())
    perf.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :])
    os.utime(perf, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert perf.stat().st_size == st.st_size
    overview(root)
    assert calls == ["matmul"]
    calls.clear()
    events = root / "matmul" / "workbench" / "events.jsonl"
    events.write_text(events.read_text() + "\n")
    overview(root)
    assert calls == ["matmul"]
