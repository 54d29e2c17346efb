"""Headless CLI: exit codes, the closing contract, nothing written on bad input, the command registry.

Data: REAL H200 fixtures (tests/fixtures/e/real) and SYNTHETIC corruptions of them (labelled).
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_workbench.cli import _rewrite_bare_kernel, build_parser, main

_spec = importlib.util.spec_from_file_location(
    "e_builders", Path(__file__).parent.parent / "fixtures/e/builders.py"
)
assert _spec and _spec.loader
B = importlib.util.module_from_spec(_spec)
sys.modules["e_builders"] = B
_spec.loader.exec_module(B)


def run_cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        input=stdin,
        check=False,
        timeout=120,
    )


def test_table_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    B.copy_real(tmp_path, "rms_norm")
    assert main(["table", "rms_norm", "--out-root", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert (
        "static_persistent-16384-2048-torch.bfloat16" in text
        and "1.875x" in text
        and "geomean 0.9989" in text
    )
    assert main(["--out-root", str(tmp_path), "table", "rms_norm", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "DONE" and data["geomean_ratio"] == "0.9989" and len(data["rows"]) == 5
    assert main(["table", "rms_norm", "--csv", "--out-root", str(tmp_path)]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 5 and {r["status"] for r in rows} == {"OK"}


def test_report_e_writes_and_prints_closing_contract(tmp_path: Path) -> None:
    B.copy_real(tmp_path, "rms_norm_hotpath")
    p = run_cli("report", "e", "rms_norm_hotpath", "--out-root", str(tmp_path), "--yes", "--no-real-scripts")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.endswith("VERDICT: INVESTIGATE\n")
    assert out.count("\nVERDICT:") + out.startswith("VERDICT:") == 1
    block = out[out.index("<PERF_LOG>") : out.index("</PERF_LOG>")]
    assert "geomean_ratio=1.82x" in block and "severity=LARGE_GAP" in block
    assert "report=" in block and "perf_log=" in block and "investigation_log=" in block
    vo = out[out.index("<VALIDATOR_OUTPUT>") : out.index("</VALIDATOR_OUTPUT>")]
    assert vo.count("$ ") == 3 and vo.count("exit=0") == 3
    assert out.index("</PERF_LOG>") < out.index("<VALIDATOR_OUTPUT>")
    perf = (tmp_path / "rms_norm_hotpath/reports/performance.md").read_text()
    assert perf.startswith("VERDICT: INVESTIGATE\n")
    # run again: replaced files are backed up
    p2 = run_cli("report", "e", "rms_norm_hotpath", "--out-root", str(tmp_path), "--yes", "--no-real-scripts")
    assert p2.returncode == 0 and "backup of replaced files" in p2.stdout


def test_dry_run_and_confirmation_write_nothing(tmp_path: Path) -> None:
    B.copy_real(tmp_path, "rms_norm")
    before = B.listing(tmp_path)
    p = run_cli("report", "e", "rms_norm", "--out-root", str(tmp_path), "--dry-run", "--no-real-scripts")
    assert p.returncode == 0 and "DRY RUN: would write" in p.stdout and "reports/performance.md (" in p.stdout
    assert "\nVERDICT:" not in p.stdout and "exit=0" in p.stdout
    p = run_cli(
        "report", "e", "rms_norm", "--out-root", str(tmp_path), "--no-real-scripts"
    )  # stdin not a TTY
    assert p.returncode == 2 and "--yes" in p.stderr
    assert B.listing(tmp_path) == before


def test_blocked_exit_1_nothing_written(tmp_path: Path) -> None:
    """SYNTHETIC: every candidate config failed."""
    B.kernel_dir(tmp_path, "k", candidate={}, baseline={"a-1": 0.2}, failed=("a-1",))
    before = B.listing(tmp_path)
    p = run_cli("report", "e", "k", "--out-root", str(tmp_path), "--yes")
    assert p.returncode == 1 and p.stdout.endswith("VERDICT: BLOCKED\n") and "Traceback" not in p.stderr
    assert B.listing(tmp_path) == before
    assert main(["table", "k", "--out-root", str(tmp_path)]) == 1


BAD_CASES = [
    "empty",
    "garbage",
    "truncated",
    "duplicate",
    "nan",
    "negative",
    "analysis_types",
    "analysis_json",
]


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_inputs_exit_2_name_location_and_write_nothing(tmp_path: Path, case: str) -> None:
    """SYNTHETIC corruptions → exit 2, ``error: file:line`` / ``key``, directory listing unchanged."""
    k = B.kernel_dir(tmp_path, "k", candidate={"a-1": 0.2, "a-2": 0.3}, baseline={"a-1": 0.2, "a-2": 0.3})
    raw = k / "reports/agent_logs/perf_cutile_rs.full.txt"
    text = raw.read_text()
    expect = "perf_cutile_rs.full.txt"
    if case == "empty":
        raw.write_text("")
    elif case == "garbage":
        raw.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00garbage")
    elif case == "truncated":
        raw.write_text(text[: text.rfind("record_json")])
    elif case == "duplicate":
        raw.write_text(text.replace("a-2", "a-1"))
    elif case == "nan":
        raw.write_text(B.perf_log("cutile-rs", [("a-1", B.stats(float("nan")))]))
    elif case == "negative":
        raw.write_text(B.perf_log("cutile-rs", [("a-1", B.stats(-0.2))]))
    elif case == "analysis_types":
        (k / "reference").mkdir()
        (k / "reference/analysis.json").write_text(
            json.dumps({"test_perf_configs": {"static_persistent": {"shapes": [{"id": "a-1"}, 42]}}})
        )
        expect = "key 'test_perf_configs.static_persistent.shapes[1]'"
    elif case == "analysis_json":
        (k / "reference").mkdir()
        (k / "reference/analysis.json").write_text('{\n  "reference_backend": "cutile",\n  oops\n}\n')
        expect = "analysis.json:3:"
    before = B.listing(tmp_path)
    for cmd in (["report", "e", "k", "--yes"], ["table", "k"]):
        p = run_cli(*cmd, "--out-root", str(tmp_path))
        assert p.returncode == 2, (case, p.stdout, p.stderr)
        assert p.stderr.startswith("error: ") and expect in p.stderr and "Traceback" not in p.stderr
        if case in ("truncated", "duplicate", "nan", "negative"):
            assert "perf_cutile_rs.full.txt:" in p.stderr  # file:line
    assert B.listing(tmp_path) == before


def test_validation_refused_exit_3(tmp_path: Path) -> None:
    """SYNTHETIC: the cuTile baseline log (required by validate_agent_e.sh) is missing."""
    k = B.kernel_dir(tmp_path, "k", candidate={"a-1": 0.2}, baseline={"a-1": 0.2})
    (k / "baseline_perf_triton_tileir.txt").write_text((k / "baseline_perf_cutile.txt").read_text())
    (k / "baseline_perf_cutile.txt").unlink()
    before = B.listing(tmp_path)
    p = run_cli("report", "e", "k", "--out-root", str(tmp_path), "--yes", "--no-real-scripts")
    assert p.returncode == 3 and "exit=1" in p.stdout and "\nVERDICT:" not in p.stdout
    assert B.listing(tmp_path) == before


def test_usage_errors_and_help(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert main(["report"]) == 2
    assert main(["table"]) == 2
    assert main(["table", "k", "--json", "--csv"]) == 2
    assert main(["table", "../x", "--out-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "not a plain identifier" in err
    assert main(["report", "e", "typo_kernel", "--out-root", str(tmp_path), "--yes"]) == 2
    assert "kernel dir does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_bare_kernel_opens_tui_and_plugin_registry() -> None:
    parser = build_parser()
    assert _rewrite_bare_kernel(parser, ["rms_norm"]) == ["open", "rms_norm"]
    assert _rewrite_bare_kernel(parser, ["--out-root", "x", "rms_norm"]) == [
        "--out-root",
        "x",
        "open",
        "rms_norm",
    ]
    assert _rewrite_bare_kernel(parser, ["table", "rms_norm"]) == ["table", "rms_norm"]
    # the command registry: a parser of only stage E's module registers table + report e
    p2 = build_parser(("cutile_workbench.cli.stage_e",))
    args = p2.parse_args(["report", "e", "k", "--dry-run"])
    assert type(args.func.__self__).__name__ == "ReportECommand" and args.dry_run
    args = p2.parse_args(["--out-root", "/o", "table", "k"])
    assert args.out_root == "/o"
    args = p2.parse_args(["table", "k", "--out-root", "/p"])
    assert args.out_root == "/p"


def test_recorded_session_is_read_only() -> None:
    from cutile_workbench.artifacts.workspace import recorded_session_root

    root = recorded_session_root("rms_norm_hotpath")
    if root is None:
        pytest.skip("no recorded session in this checkout")
    before = B.listing(root / "rms_norm_hotpath")
    p = run_cli("report", "e", "rms_norm_hotpath", "--yes", "--no-real-scripts")
    assert p.returncode == 2 and "read-only" in p.stderr
    dry = run_cli("report", "e", "rms_norm_hotpath", "--dry-run", "--no-real-scripts")
    assert dry.returncode == 0 and "severity=LARGE_GAP" in dry.stdout
    assert B.listing(root / "rms_norm_hotpath") == before


def test_bare_kernel_without_tui_prints_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    B.copy_real(tmp_path, "rms_norm")
    monkeypatch.setitem(sys.modules, "cutile_workbench.tui.app", None)  # import fails like a missing Textual
    assert main(["--out-root", str(tmp_path), "rms_norm"]) == 0
    cap = capsys.readouterr()
    assert "TUI is unavailable" in cap.err and "geomean 0.9989" in cap.out
