"""``cutile-workbench diff`` through the real CLI entry (cutile_workbench.cli.main), on fixture kernel dirs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cutile_workbench.cli import main

FIX = Path(__file__).parent.parent / "fixtures" / "ir"


def _kernel(
    tmp_path: Path,
    ref: str = "rms_norm_ref_16x1024.mlir",
    gen: str = "rms_norm_ref_4x8192.mlir",
    variant: str | None = None,
) -> Path:
    root = tmp_path / "out"
    k = root / "rms_norm"
    (k / "reference").mkdir(parents=True)
    (k / "generated").mkdir(parents=True)
    suffix = f"_{variant}" if variant else ""
    shutil.copyfile(FIX / ref, k / "reference" / f"reference{suffix}.mlir")
    shutil.copyfile(FIX / gen, k / "generated" / f"generated{suffix}_canon.mlir")
    return root


def test_text_diff_fits_width_and_ends_with_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    root = _kernel(tmp_path)
    assert main(["diff", "rms_norm", "--out-root", str(root)]) == 0
    out = capsys.readouterr().out
    assert all(len(ln) <= 120 for ln in out.splitlines())
    # the changed partition_view lines sit on one aligned row, the window slid to show the change
    pv = next(ln for ln in out.splitlines() if "tile=(16x1024)" in ln)
    assert "tile=(4x8192)" in pv and " | " in pv and pv.lstrip().startswith("10 ")
    assert "VERDICT: FAIL_FIXABLE (2 critical diff(s))  (diff_ir.sh parity, exit=1)" in out
    assert "CRITICAL: tile shape set differs  [ref L10,11,12,13,14" in out
    assert "structural diff: different" in out and "── hunk 1/" in out


def test_json_has_hunks_rows_and_audit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _kernel(tmp_path, variant="persistent")
    assert main(["--out-root", str(root), "diff", "rms_norm", "--variant", "persistent", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["variant"] == "persistent" and doc["verdict"] == "different"
    first = doc["hunks"][0]
    assert first["category"] == "tile/CTA shape" and first["audit_row"] == "layout"
    row = doc["rows"][first["start"]]
    assert row["kind"] == "replace" and row["left_no"] == 10
    assert [row["left"][s:e] for s, e in row["left_spans"]] == ["16x1024"]
    assert doc["audit"]["verdict"] == "FAIL_FIXABLE" and doc["audit"]["rows"][0]["severity"] == "CRITICAL"


def test_color_output_has_ansi(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _kernel(tmp_path)
    assert main(["diff", "rms_norm", "--out-root", str(root), "--color"]) == 0
    out = capsys.readouterr().out
    assert "\x1b[" in out and "── hunk 1/" in out


def test_printer_spellings_of_one_kernel_show_no_hunks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _kernel(tmp_path, "synthetic_softmax_cpp.mlir", "synthetic_softmax_rust.mlir")
    assert main(["diff", "rms_norm", "--out-root", str(root)]) == 0
    out = capsys.readouterr().out
    # the one difference is a dead constant only the C++ printer kept: cosmetic, folded
    assert "structural diff: different — 1 hunk(s) (1 cosmetic): 0 changed" in out and "── hunk" not in out


def test_bad_variant_and_bad_ir_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _kernel(tmp_path)
    assert main(["diff", "rms_norm", "--out-root", str(root), "--variant", "nope"]) == 2
    assert "no IR pair for variant nope; pairs: single" in capsys.readouterr().err
    gen = root / "rms_norm" / "generated" / "generated_canon.mlir"
    gen.write_bytes(b"entry @k() {\n\x00\x01bytecode\n}\n")
    assert main(["diff", "rms_norm", "--out-root", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{gen}:2: binary data" in err and "Traceback" not in err


def test_no_ir_at_all_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "out" / "k").mkdir(parents=True)
    assert main(["diff", "k", "--out-root", str(tmp_path / "out")]) == 2
    assert "pairs: none" in capsys.readouterr().err
