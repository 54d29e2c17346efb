"""E precondition: the autotune_launch import in a real child process of a SYNTHETIC TileGym tree
(importable / unimportable / backend-selector variants), and the BLOCKED files it writes."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from checks_helpers import fake

from cutile_workbench.checks.precondition import (
    SEED_COMMAND,
    check_precondition,
    plan_blocked,
    require_tilegym,
    validator_block,
)
from cutile_workbench.errors import InputError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fast_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child pytest runs collect synthetic trees that need no plugins; autoloading this venv's
    plugins (textual snapshots, hypothesis, ...) costs ~4 s per child on the shared CI box."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def _files(root: Path) -> list[str]:
    """Every file under ``root``, minus the guarded writer's own hidden bookkeeping."""
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".workbench") for part in p.relative_to(root).parts)
    )


def test_importable_package_passes(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    result = check_precondition(root, python=sys.executable, timeout_s=60)
    assert result.ok, result.child.output
    assert result.child.cwd == str(root.resolve())


def test_unimportable_package_fails_with_the_traceback(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path, autotuner=fake.AUTOTUNER_BROKEN)
    result = check_precondition(root, python=sys.executable, timeout_s=60)
    assert not result.ok
    assert result.reason == "ModuleNotFoundError: No module named 'cffi_is_not_installed_here'"
    assert "Traceback (most recent call last)" in result.traceback
    block = validator_block(result)
    assert block.startswith(f"<VALIDATOR_OUTPUT>\n$ {SEED_COMMAND}\nTraceback")
    assert block.endswith("exit=1\n</VALIDATOR_OUTPUT>\nVERDICT: BLOCKED\n")


def test_backend_selector_failure_hints_and_env_override(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path, tilegym_init=fake.TILEGYM_INIT_SELECTOR)
    failed = check_precondition(
        root, python=sys.executable, timeout_s=60, env={"CUTILE_TUTORIALS_BACKEND": ""}
    )
    assert not failed.ok and failed.reason.startswith("ValueError: Unknown backend")
    assert any("CUTILE_TUTORIALS_BACKEND" in h for h in failed.hints)
    ok = check_precondition(
        root, python=sys.executable, timeout_s=60, env={"CUTILE_TUTORIALS_BACKEND": "triton"}
    )
    assert ok.ok


def test_timeout_kills_the_child(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path, autotuner="import time\ntime.sleep(60)\n")
    result = check_precondition(root, python=sys.executable, timeout_s=1.5)
    assert not result.ok and result.child.timed_out
    assert "timed out after 1.5 s" in result.reason


def test_bad_paths_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        require_tilegym(tmp_path / "missing")
    with pytest.raises(InputError, match="not a TileGym checkout"):
        require_tilegym(tmp_path)
    with pytest.raises(InputError) as err:
        require_tilegym(None)
    assert err.value.key == "TILEGYM_PATH"
    root = fake.make_tree(tmp_path / "tg")
    with pytest.raises(InputError, match="cannot start Python"):
        check_precondition(root, python=str(tmp_path / "no-python"), timeout_s=10)


def test_plan_has_exactly_the_two_blocked_files(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path / "tg", autotuner=fake.AUTOTUNER_BROKEN)
    result = check_precondition(root, python=sys.executable, timeout_s=60)
    plan = plan_blocked(result, "bmm", tmp_path / "out")
    assert [f.relpath for f in plan.files] == [
        "reports/agent_logs/agent_e.md",
        "SKILL_METHODOLOGY_BLOCKED.txt",
    ]
    log, marker = (f.content for f in plan.files)
    assert log.startswith("# Agent E log: bmm\n") and "No module named 'cffi_is_not_installed_here'" in log
    assert "VERDICT: BLOCKED" in log
    assert marker.startswith("BLOCKED: Agent E precondition failed for kernel 'bmm'")
    assert plan.verdict == "BLOCKED" and plan.ok and plan.kernel_dir == tmp_path / "out" / "bmm"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_cli_blocked_writes_only_the_two_files(tmp_path: Path) -> None:
    pytest.importorskip("cutile_workbench.artifacts.writer")
    root = fake.make_tree(tmp_path / "tg", autotuner=fake.AUTOTUNER_BROKEN)
    tree_before = _files(root)
    out_root = tmp_path / "out"
    missing_dir = _cli("check", "bmm", "--tilegym", str(root), "--out-root", str(out_root), cwd=tmp_path)
    assert missing_dir.returncode == 1 and "BLOCKED files not written" in missing_dir.stdout
    assert not out_root.exists()  # the writer creates nothing outside an existing kernel dir
    (out_root / "bmm").mkdir(parents=True)  # Agent A made the kernel dir
    proc = _cli("check", "bmm", "--tilegym", str(root), "--out-root", str(out_root), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("VERDICT: BLOCKED")
    assert "precondition FAILED: ModuleNotFoundError" in proc.stdout
    assert _files(out_root) == ["bmm/SKILL_METHODOLOGY_BLOCKED.txt", "bmm/reports/agent_logs/agent_e.md"]
    assert _files(root) == tree_before  # the checkout is untouched
    # without an out root the verdict is the same and nothing is written anywhere
    proc2 = _cli("check", "bmm", "--tilegym", str(root), cwd=tmp_path)
    assert proc2.returncode == 1 and "BLOCKED files were not written" in proc2.stdout


def test_cli_env_flag_is_validated(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path / "tg")
    proc = _cli("check", "bmm", "--tilegym", str(root), "--env", "NOEQUALS", cwd=tmp_path)
    assert proc.returncode == 2 and "--env expects KEY=VALUE" in proc.stderr


TILEGYM = REPO / ".fetched" / "TileGym"


@pytest.mark.skipif(not (TILEGYM / "src").is_dir(), reason="TileGym snapshot not fetched")
@pytest.mark.skipif(
    importlib.util.find_spec("torch") is not None, reason="torch installed: the import may succeed"
)
def test_real_tilegym_without_torch_is_blocked() -> None:
    result = check_precondition(TILEGYM, python=sys.executable, timeout_s=120)
    assert not result.ok
    assert result.reason == "ImportError: [TileGym] PyTorch is required to run this library."
    assert any("no torch" in h for h in result.hints)
