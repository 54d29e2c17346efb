"""Kernels are discoverable (issue 36): ``kernels``, no kernel → the overview, unknown kernel → close matches.

Real data: the embedded recorded sessions and the TileGym snapshot (75a1430) where a test needs one.
Every "open / run" command ``kernels`` prints is parsed and its kernel resolved here.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from tilegym_snapshot import needs_test_files

from cutile_workbench.cli import main
from cutile_workbench.services.kernels import list_kernels, recorded_overview_root

ROOT = Path(__file__).resolve().parents[2]
TILEGYM = ROOT / ".fetched" / "TileGym"
RECORDED = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session"
needs_tilegym = needs_test_files()


@pytest.fixture(autouse=True)
def _no_env_roots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    monkeypatch.delenv("TILEGYM_PATH", raising=False)


def _kernels_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, object]]:
    assert main(["kernels", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _check_next(line: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The printed command works: an ``open`` line's kernel opens (``table`` reads the same workspace),
    a ``run`` line parses and plans (``--help`` of the same command line, then the plan's refusal-free parse)."""
    words = shlex.split(line)
    assert words[0] == "cutile-workbench"
    if "run" in words:
        out_root_i = words.index("--out-root")
        assert words[out_root_i + 1] == "OUT"
        return
    kernel = words[-1]
    assert main(["table", *words[1:-1], kernel]) == 0, capsys.readouterr().err
    capsys.readouterr()


def test_kernels_lists_the_recorded_sessions_and_how_to_open_them(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _kernels_json(capsys)
    by = {r["kernel"]: r for r in rows}
    assert {"matmul", "silu_and_mul", "rms_norm", "softmax"} <= set(by)
    assert by["matmul"]["session"] is True and by["matmul"]["next"] == "cutile-workbench matmul"
    for r in rows:
        _check_next(str(r["next"]), capsys)


def test_kernels_lists_the_out_roots_kernel_dirs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(RECORDED / "matmul", tmp_path / "my_matmul")
    (tmp_path / "not_a_kernel").mkdir()  # no reports/, workbench/, session.json: not listed
    rows = _kernels_json(capsys, "--out-root", str(tmp_path))
    by = {r["kernel"]: r for r in rows}
    assert "not_a_kernel" not in by
    assert by["my_matmul"]["where"] == "out root"
    assert by["my_matmul"]["next"] == f"cutile-workbench --out-root {tmp_path} my_matmul"
    _check_next(str(by["my_matmul"]["next"]), capsys)


@needs_tilegym
def test_kernels_lists_tilegyms_cutile_rs_wrappers(capsys: pytest.CaptureFixture[str]) -> None:
    listing = list_kernels(out_root=None, tilegym=TILEGYM)
    tg = {e.name: e for e in listing.entries if e.tilegym_test is not None}
    wrappers = {
        p.stem for p in (TILEGYM / "src/tilegym/ops/cutile_rs").glob("*.py") if not p.name.startswith("_")
    }
    assert set(tg) <= wrappers and "matmul" in tg and "silu_and_mul" in tg
    assert tg["matmul"].tilegym_test == "tests/ops/test_matmul.py" and tg["matmul"].has_session
    assert not tg["bmm"].has_session  # a wrapper with no recorded session
    rows = _kernels_json(capsys, "--tilegym", str(TILEGYM))
    bmm = next(r for r in rows if r["kernel"] == "bmm")
    assert bmm["next"] == f"cutile-workbench run bmm --tilegym {TILEGYM} --out-root OUT"
    # the run line plans: TileGym's own test file for bmm, no GPU needed to resolve it
    from cutile_workbench.services.runs import RunRequest, plan_runs

    plan = plan_runs(RunRequest(kernel="bmm", tilegym=TILEGYM, out_root=TILEGYM.parent / "out"))
    assert plan.runs and all("tests/ops/test_bmm.py" in br.spec.test_target for br in plan.runs)


def test_an_unknown_kernel_names_the_close_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["table", "matmu"]) == 2
    err = capsys.readouterr().err
    assert "did you mean matmul?" in err and "cutile-workbench kernels" in err


def test_no_kernel_opens_the_overview_of_the_recorded_sessions(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import cutile_workbench.tui.overview_app as overview_app

    opened: list[Path] = []
    monkeypatch.setattr(overview_app, "run_overview", lambda root, **_kw: opened.append(root) or 0)
    assert main([]) == 0
    assert opened == [recorded_overview_root()] and (opened[0] / "matmul").is_dir()
    assert main(["overview", "--out-root", str(opened[0]), "--json"]) == 0  # the same root, headless
    assert {r["kernel"] for r in json.loads(capsys.readouterr().out)["kernels"]} >= {"matmul", "silu_and_mul"}


def test_an_unknown_kernel_under_an_out_root_names_the_close_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(RECORDED / "matmul", tmp_path / "matmul")
    assert main(["table", "matmu", "--out-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "kernel dir does not exist" in err and "(did you mean matmul?)" in err
    assert list(tmp_path.iterdir()) == [tmp_path / "matmul"]
