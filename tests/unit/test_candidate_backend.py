"""One resolution of the candidate backend for the TUI and F (artifacts.candidate), on the REAL
recorded rms_norm H200 session plus synthetic session.json shapes (labelled)."""

from __future__ import annotations

from pathlib import Path

from cutile_workbench.artifacts.candidate import resolve_candidate_backend as candidate_backend
from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.stages.e.report import load_candidate

RECORDED = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / "rms_norm" / "session"


def test_the_recorded_session_names_its_stand_in_and_the_explicit_choice_wins() -> None:
    ws = open_workspace("rms_norm", out_root=RECORDED, env={})
    log = load_candidate(ws)[0]
    session = ws.session_meta()
    assert candidate_backend(session, log) == session["candidate"]
    assert candidate_backend(session, log, explicit="triton") == "triton"


def test_without_a_name_the_log_then_the_run_token_decide() -> None:
    ws = open_workspace("rms_norm", out_root=RECORDED, env={})
    log = load_candidate(ws)[0]
    assert log is not None
    only = {r.framework for r in log.records}
    assert candidate_backend({}, log) == (next(iter(only)) if len(only) == 1 else log.records[0].framework)
    # SYNTHETIC session.json shapes: a `run` before E, nothing recorded at all
    assert candidate_backend({"runs": {"candidate": {"backend_token": "cutile_rs"}}}, None) == "cutile-rs"
    assert candidate_backend({}, None) is None


def test_the_tui_and_f_resolve_the_same_backend() -> None:
    from cutile_workbench.stages.f.inputs import collect_inputs
    from cutile_workbench.tui.loaders import load_app_data

    data = load_app_data("rms_norm", out_root=RECORDED, tilegym=None, env={})
    ws = open_workspace("rms_norm", out_root=RECORDED, env={})
    assert data.candidate_backend == collect_inputs(ws).candidate_backend


def test_the_tui_and_f_agree_when_the_session_names_another_backend(tmp_path: Path) -> None:
    """SYNTHETIC: the recorded kernel dir copied, its session.json naming a backend its log lacks."""
    import json
    import shutil

    from cutile_workbench.stages.f.inputs import collect_inputs
    from cutile_workbench.tui.loaders import load_app_data

    shutil.copytree(RECORDED / "rms_norm", tmp_path / "rms_norm")
    meta_path = tmp_path / "rms_norm" / "workbench" / "session.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    meta["candidate"] = "cutile-hotpath"
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    data = load_app_data("rms_norm", out_root=tmp_path, tilegym=None, env={})
    f_backend = collect_inputs(open_workspace("rms_norm", out_root=tmp_path, env={})).candidate_backend
    assert data.candidate_backend == f_backend == "cutile-hotpath"


def test_the_log_framework_is_one_rule_for_identity_and_the_speed_of_light() -> None:
    """REAL rms_norm log (our cuTile kernel standing in): its one framework; SYNTHETIC: none or several
    frameworks → cutile-rs. Identity (report.candidate_framework) and the SOL section use this rule."""
    import dataclasses

    from cutile_workbench.artifacts.candidate import log_framework
    from cutile_workbench.model import PerfLog
    from cutile_workbench.stages.e.report import candidate_framework

    log = load_candidate(open_workspace("rms_norm", out_root=RECORDED, env={}))[0]
    assert log_framework(log) == candidate_framework(log) == "cutile"
    assert log_framework(None) == log_framework(PerfLog(path="x")) == "cutile-rs"
    mixed = PerfLog(
        path="x", records=[log.records[0], dataclasses.replace(log.records[1], framework="cutile-rs")]
    )
    assert log_framework(mixed) == candidate_framework(mixed) == "cutile-rs"
