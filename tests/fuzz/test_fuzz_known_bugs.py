"""Regression tests for the crashes and invariant breaks the fuzzer found (all fixed).

Each test states the rule (bad input → a located ``InputError``; a FAILED config is never DONE; an
absurd median never yields an inf geomean). A newly found bug is added here as
``xfail(strict=True)`` with a matching ``KNOWN_BUGS`` entry in ``tests/fuzzing/targets.py`` until it
is fixed. Inputs are SYNTHETIC minimal forms of the fuzzer's mutated real files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cutile_workbench.errors import InputError

# CPython refuses int("…") over 4300 digits (sys.int_info.default_max_str_digits) with a ValueError
# that json.loads lets through; 5000 digits is the minimal trigger (the fuzzer's huge_line op).
HUGE_INT = "1" * 5000


def _expect_located(path: Path, call: Callable[[Path], object]) -> None:
    with pytest.raises(InputError) as ei:
        call(path)
    assert str(path) in str(ei.value)


def test_junit_unknown_encoding_is_an_input_error(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.perflog.junit import parse_junit_xml

    p = tmp_path / "junit.xml"
    p.write_bytes(b'<?xml version="1.0" encoding="utf-1"?><testsuites></testsuites>')
    _expect_located(p, parse_junit_xml)


def test_analysis_huge_integer_is_an_input_error(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.analysis import load_analysis

    p = tmp_path / "analysis.json"
    p.write_text('{"autotune_key": [], "best_config": {"BLOCK": ' + HUGE_INT + "}}\n")
    _expect_located(p, load_analysis)


def test_launches_huge_integer_is_an_input_error(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.launches_io import load_launch_sets

    p = tmp_path / "launches.json"
    p.write_text('{"version": 1, "sets": [' + HUGE_INT + "]}\n")
    _expect_located(p, load_launch_sets)


def test_events_huge_integer_is_an_input_error(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.events import read_events

    p = tmp_path / "events.jsonl"
    p.write_text('{"event": "progress", "ts": ' + HUGE_INT + "}\n")
    with pytest.raises(InputError) as ei:
        read_events(p)
    assert ei.value.line == 1 and str(p) in str(ei.value)


def test_failed_test_with_a_record_never_yields_done() -> None:
    """Real rms_norm H200 log; all medians halved (SYNTHETIC), one test's status word set to FAILED."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent))
    from fuzzing.logedit import Edit, edit_log

    from cutile_workbench.artifacts.analysis import load_analysis
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log
    from cutile_workbench.stages.e.stats import build_ratio_table

    session = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/rms_norm/session/rms_norm"
    cand_text = (session / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    edits = {
        p: Edit("scale", factor=0.5)
        for p in (
            "4096-1024-torch.bfloat16",
            "16384-2048-torch.bfloat16",
            "8192-8192-torch.bfloat16",
            "4096-4096-torch.bfloat16",
            "16384-1024-torch.bfloat16",
            "8192-2048-torch.bfloat16",
            "32768-4096-torch.bfloat16",
        )
    }
    edits["16384-1024-torch.bfloat16"] = Edit("fail_keep_record")
    cand = parse_perf_log("perf_cutile_rs.full.txt", text=edit_log(cand_text, edits))
    base = parse_perf_log(session / "baseline_perf_triton_tileir.txt")
    table = build_ratio_table(
        "rms_norm",
        cand,
        {"triton_tileir": base},
        load_analysis(session / "reference/analysis.json"),
        n_boot=10,
    )
    failed = [r for r in table.rows if r.params == "16384-1024-torch.bfloat16"]
    assert failed and failed[0].status == "NA"
    assert table.verdict != "DONE"


def test_absurd_median_gives_a_finite_geomean_or_an_na_row() -> None:
    """Real rms_norm H200 logs; one candidate median replaced by 1e15 ms and its baseline by 1e-300 ms
    (SYNTHETIC). Both pass the parser's bounds (1e308 no longer did, so this reaches the stats' guard):
    the quotient overflows to inf."""
    import math
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent))
    from fuzzing.logedit import Edit, edit_log

    from cutile_workbench.artifacts.analysis import load_analysis
    from cutile_workbench.artifacts.perflog.parser import parse_perf_log
    from cutile_workbench.stages.e.stats import build_ratio_table

    session = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/rms_norm/session/rms_norm"
    cand_text = (session / "reports/agent_logs/perf_cutile_rs.full.txt").read_text()
    edited = edit_log(cand_text, {"8192-8192-torch.bfloat16": Edit("value", token="1e15")})
    cand = parse_perf_log("perf_cutile_rs.full.txt", text=edited)
    base_text = (session / "baseline_perf_triton_tileir.txt").read_text()
    base_edited = edit_log(base_text, {"8192-8192-torch.bfloat16": Edit("value", token="1e-300")})
    base = parse_perf_log("baseline_perf_triton_tileir.txt", text=base_edited)
    assert cand.records and base.records and not cand.notes and not base.notes  # the parser took both
    table = build_ratio_table(
        "rms_norm",
        cand,
        {"triton_tileir": base},
        load_analysis(session / "reference/analysis.json"),
        n_boot=10,
    )
    row = next(r for r in table.rows if r.params == "8192-8192-torch.bfloat16")
    assert row.status == "NA" and row.reason is not None and "not finite" in row.reason
    assert table.geomean is not None and math.isfinite(table.geomean)


def test_tui_loader_survives_a_huge_integer_in_analysis_json(tmp_path: Path) -> None:
    import shutil

    pytest.importorskip("textual")
    from cutile_workbench.tui.loaders import load_app_data

    session = Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/rms_norm/session/rms_norm"
    shutil.copytree(session, tmp_path / "rms_norm", ignore=shutil.ignore_patterns("launches.json.gz"))
    (tmp_path / "rms_norm/reference/analysis.json").write_text(
        '{"autotune_key": [], "best_config": {"BLOCK": ' + HUGE_INT + "}}\n"
    )
    data = load_app_data("rms_norm", out_root=tmp_path, tilegym=None, env={})
    assert any("analysis.json" in str(p) for p in data.problems)
