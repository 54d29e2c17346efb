"""Every face on the same session states the same facts (issue 30): identity, IR pairs, configs, geomean.

The REAL recorded H200 matmul session (6 configs, 2 variants, the IR each config ran under
``workbench/ir/``, per-launch captures), copied to a temp out root. Faces: ``table --json``, the TUI's
load (what its Ratios / IR / Timeline screens show), ``diff --json``, ``overview --json``,
``timeline --json`` and ``history --json`` per config, named as the TUI labels it. Before the session,
``diff`` showed the variant pairs only (the TUI both kinds), ``timeline`` and ``history`` refused the
TUI's labels, and the overview said nothing about identity for a performance.md without the line.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cutile_workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session" / "matmul"


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:  # type: ignore[type-arg]
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc: dict = json.loads(out)  # type: ignore[type-arg]
    return doc


@pytest.fixture(scope="module")
def faces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What each face states about the one session (computed once for the module's tests)."""
    from cutile_workbench.model import config_labels
    from cutile_workbench.tui.loaders import load_app_data

    root = tmp_path_factory.mktemp("faces") / "out"
    shutil.copytree(MATMUL, root / "matmul")
    data = load_app_data("matmul", out_root=root, tilegym=None)
    return {"root": root, "data": data, "config_labels": config_labels}


def test_table_and_tui_state_the_same_configs_geomean_and_identity(
    faces: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    root, data = faces["root"], faces["data"]
    table = _json(capsys, "table", "matmul", "--out-root", str(root), "--json")
    assert data.table is not None  # type: ignore[attr-defined]
    tui_rows = {r.params for r in data.table.rows}  # type: ignore[attr-defined]
    assert {r["params"] for r in table["rows"]} == tui_rows and len(tui_rows) == 6
    assert table["geomean"] == pytest.approx(data.table.geomean)  # type: ignore[attr-defined]
    marks = {r["params"]: r["identity"]["mark"] for r in table["rows"]}
    assert marks == data.identity_marks()  # type: ignore[attr-defined]
    assert table["candidate_identity"]["summary"] == data.trust.summary  # type: ignore[attr-defined]


def test_diff_shows_the_ir_pairs_the_tui_shows(
    faces: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """By variant AND by config: the same set on both faces (the CLI showed the variant pairs only)."""
    root, data = faces["root"], faces["data"]
    assert data.ir_loader is not None  # type: ignore[attr-defined]
    pairs, problems = data.ir_loader()  # type: ignore[attr-defined]
    assert problems == []
    tui = {("config", p.config) if p.config else ("variant", p.name) for p in pairs}
    doc = _json(capsys, "diff", "matmul", "--out-root", str(root), "--json")
    cli = {("config", p["config"]) if p["config"] else ("variant", p["variant"]) for p in doc["pairs"]}
    assert cli == tui and len([k for k, _ in cli if k == "config"]) == 6
    tui_verdicts = {p.config: p.verdict for p in pairs if p.config}
    assert {p["config"]: p["audit_verdict"] for p in doc["pairs"] if p["config"]} == tui_verdicts


def test_every_config_the_tui_labels_is_accepted_by_timeline_and_history(
    faces: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """The Ratios screen's label of each config names that config in `timeline` and `history`, and
    timeline's identity for it is the row's mark in `table` and in the TUI."""
    root, data = faces["root"], faces["data"]
    labels = faces["config_labels"]([r.params for r in data.table.rows])  # type: ignore[attr-defined,operator]
    marks = data.identity_marks()  # type: ignore[attr-defined]
    for params, label in labels.items():
        assert label != params  # the six configs differ in some fields: the TUI shows only those
        tl = _json(capsys, "timeline", "matmul", "--out-root", str(root), "--config", label, "--json")
        assert {b["params"] for b in tl["backends"]} == {params}
        assert tl["identity"]["mark"] == marks[params]
        hist = _json(capsys, "history", "matmul", "--out-root", str(root), "--config", label, "--json")
        assert {s["params"] for s in hist["series"]} == {params}


def test_overview_states_the_identity_table_states(
    faces: dict[str, object], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Also for a performance.md that predates the identity line (SYNTHETIC edit: the line removed from
    the report E writes): the overview reads the captures, as `table` does, instead of showing nothing."""
    root = tmp_path / "out"
    shutil.copytree(MATMUL, root / "matmul")
    assert main(["report", "e", "matmul", "--out-root", str(root), "--yes", "--no-real-scripts"]) == 0
    capsys.readouterr()
    report = root / "matmul" / "reports" / "performance.md"
    report.write_text(re.sub(r"(?m)^candidate identity: .*\n", "", report.read_text(encoding="utf-8")))
    table = _json(capsys, "table", "matmul", "--out-root", str(root), "--json")
    overview = _json(capsys, "overview", "--out-root", str(root), "--json", "--no-cache")
    (row,) = overview["kernels"]
    assert row["e_source"] == "performance.md"
    summary = table["candidate_identity"]["summary"].removeprefix("WARNING: ")
    assert row["identity"] == summary.removeprefix("candidate identity: ")
    assert row["geomean"] == pytest.approx(table["geomean"], abs=5e-5)


def test_f_and_the_timeline_state_the_reference_config_the_tui_states(
    faces: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    """The config the reference ran, per config: F's inputs (report f), `timeline --json` and the TUI's
    line under the Ratios table read the same trust; F's identities are `table`'s."""
    from cutile_workbench.services import stage_f

    root, data = faces["root"], faces["data"]
    inputs = stage_f.collect(stage_f.open_kernel("matmul", out_root=root, tilegym=None))  # type: ignore[arg-type]
    assert inputs.trust is not None
    assert {p: i.mark for p, i in inputs.trust.identities.items()} == data.identity_marks()  # type: ignore[attr-defined]
    for params, rc in inputs.trust.reference_configs.items():
        tl = _json(capsys, "timeline", "matmul", "--out-root", str(root), "--config", params, "--json")
        assert tl["reference_config"]["text"] == rc.text
        assert rc.config is not None and rc.config.label in data.reference_config_line(params)  # type: ignore[attr-defined]
