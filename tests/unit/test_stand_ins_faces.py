"""Stand-ins named on every face and report file (issue 18 §5), on the REAL recorded sessions.

``rms_norm``: the candidate is our cuTile Python kernel (framework ``cutile``) in the cutile-rs slot
and the ``triton_tileir`` baseline is plain Triton (its session.json says ``baseline: "triton"``).
``rms_norm_hotpath``: a deliberately flawed cuTile wrapper (``cutile-hotpath``) as the candidate.
``matmul``: real cutile-rs, so nothing may be called a stand-in there. SYNTHETIC inputs are labelled.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cutile_workbench.artifacts.stand_ins import stand_ins_of
from cutile_workbench.cli import main
from cutile_workbench.services import stage_f

ROOT = Path(__file__).resolve().parents[2]
RMS = "STAND-IN candidate: cutile (the candidate log's framework), not cutile-rs"
PLAIN = "triton_tileir baseline: plain Triton, not Triton-TileIR"


def _out(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 0
    return capsys.readouterr().out


def test_history_timeline_and_diff_name_the_stand_in(capsys: pytest.CaptureFixture[str]):
    history = _out(["history", "rms_norm"], capsys)
    assert RMS in history.splitlines()[1] and PLAIN in history.splitlines()[2]
    assert json.loads(_out(["history", "rms_norm", "--json"], capsys))["stand_ins"][0].startswith(RMS)
    timeline = _out(["timeline", "rms_norm", "--config", "16384-2048-torch.bfloat16"], capsys)
    assert timeline.splitlines()[1].startswith(
        "STAND-IN candidate: cutile (the captures' candidate's framework), not cutile-rs"
    )
    doc = json.loads(
        _out(["timeline", "rms_norm", "--config", "16384-2048-torch.bfloat16", "--json"], capsys)
    )
    assert any(s.startswith(PLAIN) for s in doc["stand_ins"])
    diff = _out(["diff", "rms_norm"], capsys)
    assert diff.splitlines()[0].startswith(RMS)
    assert json.loads(_out(["diff", "rms_norm", "--json"], capsys))["stand_ins"][0].startswith(RMS)


def test_real_cutile_rs_is_never_called_a_stand_in(capsys: pytest.CaptureFixture[str]):
    recorded = str(ROOT / "cutile_workbench/profiles/tilegym/session")
    for args in (
        ["history", "matmul"],
        [
            "timeline",
            "matmul",
            "--out-root",
            recorded,
            "--config",
            "True-True-False-False-2048-2048-2048-0-0-torch.float16",
        ],
        ["diff", "matmul", "--variant", "static_persistent"],
        ["table", "matmul"],
    ):
        out = _out(args, capsys)
        assert "STAND-IN" not in out and "plain Triton" not in out and "unknown (no candidate log" not in out


def test_table_and_performance_md_label_the_plain_triton_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    table = _out(["table", "rms_norm"], capsys)
    assert PLAIN in table and "  triton_tileir (plain Triton)  " in table
    shutil.copytree(ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm", tmp_path / "rms_norm")
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.stages.e.report import plan_e_report

    plan = plan_e_report(open_workspace("rms_norm", out_root=tmp_path), run_real_scripts=False)
    assert plan.ok, plan.validator_output
    md = next(f.content for f in plan.files if f.relpath == "reports/performance.md")
    assert (
        "| Config | baseline | baseline (ms) | cutile (stand-in) (ms) |" in md and "cutile-rs (ms)" not in md
    )
    assert "Ratio = candidate (cutile (stand-in); framework(s) in the log: cutile)" in md
    assert f"**{PLAIN}" in md and "| triton_tileir (plain Triton) |" in md


def test_f_report_files_all_say_stand_in(tmp_path: Path):
    shutil.copytree(
        ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm_hotpath", tmp_path / "rms_norm_hotpath"
    )
    ws = stage_f.open_kernel("rms_norm_hotpath", out_root=tmp_path, tilegym=None)
    report = stage_f.plan(ws, run_real_scripts=False).plan
    assert report.ok, report.validator_output
    files = {f.relpath: f.content for f in report.files}
    assert {
        "reports/perf_investigation_all_shapes.md",
        "reports/agent_f.md",
        "reports/agent_logs/agent_f.md",
    } <= set(files)
    for rel, text in files.items():
        assert "STAND-IN candidate: cutile-hotpath (the candidate log's framework), not cutile-rs" in text, (
            rel
        )


def test_triton_tileir_is_confirmed_only_by_a_recorded_enable_tile():
    """SYNTHETIC session.json dicts: the three answers, and what each face prints."""
    plain = stand_ins_of({"cutile-rs"}, {"baseline": "triton"}, {"triton_tileir"})
    assert plain.baseline_label("triton_tileir") == "triton_tileir (plain Triton)" and not plain.stand_in
    tileir = stand_ins_of(
        {"cutile-rs"},
        {"runs": {"baseline_triton_tileir": {"env_overrides": {"ENABLE_TILE": "1"}}}},
        {"triton_tileir"},
    )
    assert tileir.baseline_label("triton_tileir") == "triton_tileir" and tileir.lines() == []
    unknown = stand_ins_of({"cutile-rs"}, {}, {"triton_tileir"})
    assert unknown.lines() == [
        "triton_tileir baseline: Triton-TileIR not confirmed (ENABLE_TILE=1 not recorded for its run)"
    ]
    nothing = stand_ins_of(None, None)
    assert nothing.lines() == [
        "candidate: unknown (no candidate log and session.json names none): it may not be cutile-rs"
    ]


def test_ratios_screen_rows_label_the_plain_triton_baseline():
    """REAL rms_norm session through the TUI's loader: the Ratios row's baseline cell says plain Triton."""
    from cutile_workbench.tui.loaders import load_app_data
    from cutile_workbench.tui.widgets.ratio_table import COLUMN_KEYS, row_cells

    baseline = COLUMN_KEYS.index("baseline")
    data = load_app_data("rms_norm", out_root=None, tilegym=None, env={})
    assert data.table is not None and data.stand_in
    assert row_cells(data.table.matched[0])[baseline].plain == "triton_tileir (plain Triton)"
    real = load_app_data("matmul", out_root=None, tilegym=None, env={})
    assert real.table is not None and row_cells(real.table.matched[0])[baseline].plain == "cutile"
