"""``history`` and ``diff`` read on without a malformed ``reference/analysis.json``, and say so (issue 36):
the file and line on stderr (stdout stays the table or the JSON document), and in ``history --json``.

Data: the REAL recorded matmul session (H200), copied; its analysis.json is then cut mid-document
(SYNTHETIC damage: a write that stopped half-way). Before this change both commands were silent.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cutile_workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session" / "matmul"


@pytest.fixture
def damaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    monkeypatch.delenv("TILEGYM_PATH", raising=False)
    shutil.copytree(MATMUL, tmp_path / "matmul")
    analysis = tmp_path / "matmul" / "reference" / "analysis.json"
    text = analysis.read_text()
    analysis.write_text(text[: len(text) // 2])
    return tmp_path


def _line_of_the_cut(root: Path) -> str:
    analysis = root / "matmul" / "reference" / "analysis.json"
    return f"{analysis}:{analysis.read_text().count(chr(10)) + 1}: invalid JSON"


@pytest.mark.parametrize("form", [[], ["--json"], ["--csv"]])
def test_history_names_the_ignored_analysis_json(
    damaged: Path, form: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "matmul", "--out-root", str(damaged), *form]) == 0
    out, err = capsys.readouterr()
    assert f"warning: ignored {_line_of_the_cut(damaged)}" in err, err
    assert "analysis.json" not in out or form == ["--json"]
    if form == ["--json"]:
        doc = json.loads(out)  # stdout stays one JSON document
        assert [i.startswith(f"ignored {_line_of_the_cut(damaged)}") for i in doc["ignored"]] == [True]


def test_diff_names_the_ignored_analysis_json(damaged: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "matmul", "--out-root", str(damaged)]) == 0
    out, err = capsys.readouterr()
    assert f"warning: ignored {_line_of_the_cut(damaged)}" in err, err
    assert "diff_ir.sh-parity audit" in out  # the diff itself is still shown


def test_an_intact_session_warns_of_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "matmul"]) == 0 and main(["diff", "matmul"]) == 0
    assert "warning" not in capsys.readouterr().err
