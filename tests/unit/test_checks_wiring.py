"""test_perf wiring: static classification, the minimal edit, guarded apply + revert, CLI.

Trees are SYNTHETIC TileGym-shaped checkouts (tests/fixtures/tilegym_tree/fake_tilegym.py)
written into tmp dirs; collection runs real pytest child processes there.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from checks_helpers import fake
from tilegym_snapshot import needs_test_files

from cutile_workbench.checks.testfile import load_test_module
from cutile_workbench.checks.wiring import analyse_wiring, apply_wiring, check_wiring, find_test_file
from cutile_workbench.errors import InputError

REPO = Path(__file__).resolve().parents[2]
TILEGYM = REPO / ".fetched" / "TileGym"
needs_tilegym = needs_test_files()


@pytest.fixture(autouse=True)
def _fast_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child pytest runs collect synthetic trees that need no plugins; autoloading this venv's
    plugins (textual snapshots, hypothesis, ...) costs ~4 s per child on the shared CI box."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def _status(root: Path, name: str = "test_bmm.py", qual: str = "Test_BMM_FWD::test_perf"):
    module = load_test_module(root / "tests" / "ops" / name, root)
    return analyse_wiring(module, module.find(qual))


def _changed_lines(diff: str) -> list[str]:
    return [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


def test_missing_cutile_rs_gets_a_one_line_edit_in_test_op_style(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    status = _status(root)
    assert status.state == "missing" and status.edit is not None
    assert _changed_lines(status.edit.diff()) == [
        '-    _perf_frameworks = ["cutile", "pytorch"]',
        '+    _perf_frameworks = ["cutile", "cutile-rs", "pytorch"]',
    ]


@pytest.mark.parametrize(
    ("test_op_literal", "perf_decorator", "expected_plus"),
    [
        # single quotes and the underscore spelling are copied verbatim from test_op
        (
            "'cutile_rs'",
            '@pytest.mark.parametrize("framework", ["cutile", "pytorch"])',
            '+    @pytest.mark.parametrize("framework", ["cutile", \'cutile_rs\', "pytorch"])',
        ),
        # no "pytorch" entry: appended at the end
        (
            '"cutile-rs"',
            '@pytest.mark.parametrize("framework", ("cutile",))',
            '+    @pytest.mark.parametrize("framework", ("cutile", "cutile-rs",))',
        ),
    ],
)
def test_literal_axis_styles(
    tmp_path: Path, test_op_literal: str, perf_decorator: str, expected_plus: str
) -> None:
    text = f"""\
import pytest


class Test_Op:
    @pytest.mark.parametrize("backend", ["cutile", {test_op_literal}])
    def test_op(self, backend):
        assert 1 == 1

    @pytest.mark.parametrize("m", [1024, 2048])
    {perf_decorator}
    def test_perf(self, m, framework):
        pass
"""
    root = fake.make_tree(tmp_path, tests={"test_op.py": text})
    status = _status(root, "test_op.py", "Test_Op::test_perf")
    assert status.state == "missing" and status.edit is not None
    assert _changed_lines(status.edit.diff())[1] == expected_plus


def test_multiline_list_and_shared_name(tmp_path: Path) -> None:
    multiline = """\
import pytest

_BACKENDS = ["cutile", "cutile-rs"]
_PERF = [
    "cutile",
    "pytorch",
]


class Test_A:
    @pytest.mark.parametrize("backend", _BACKENDS)
    def test_op(self, backend):
        pass

    @pytest.mark.parametrize("framework", _PERF)
    def test_perf(self, framework):
        pass
"""
    shared = """\
import pytest


class Test_B:
    _backends = ["cutile"]
    if is_backend_available("cutile-rs"):
        _test_op_backends = _backends + ["cutile-rs"]

    @pytest.mark.parametrize("backend", _backends)
    def test_op2(self, backend):
        pass

    @pytest.mark.parametrize("backend", _backends)
    def test_perf(self, backend):
        pass
"""
    root = fake.make_tree(tmp_path, tests={"test_a.py": multiline, "test_b.py": shared})
    a = _status(root, "test_a.py", "Test_A::test_perf")
    assert a.edit is not None and _changed_lines(a.edit.diff()) == ['+    "cutile-rs",']
    b = _status(root, "test_b.py", "Test_B::test_perf")
    # _backends is shared with a correctness test, so the edit stays on test_perf's decorator
    assert b.edit is not None
    assert (
        _changed_lines(b.edit.diff())[1]
        == '+    @pytest.mark.parametrize("backend", _backends + ["cutile-rs"])'
    )


def test_conditional_and_no_style_states(tmp_path: Path) -> None:
    no_style = fake.TEST_BMM_MISSING.replace('["cutile", "cutile-rs"]', '["cutile"]')
    root = fake.make_tree(tmp_path, tests={"test_matmul.py": fake.TEST_MATMUL, "test_bmm.py": no_style})
    assert _status(root, "test_matmul.py", "Test_Matmul::test_perf").state == "wired"
    s = _status(root)
    assert s.state == "no_style" and s.edit is None


WRAPPER = """\
from tilegym.backend import register_impl


@register_impl("bmm", backend='cutile-rs')
def bmm(a, b):
    return a @ b
"""


def test_no_style_in_the_test_takes_the_wrappers_register_impl_spelling(tmp_path: Path) -> None:
    """SYNTHETIC: the correctness test has no cutile-rs entry; the wrapper registers backend='cutile-rs'."""
    no_style = fake.TEST_BMM_MISSING.replace('["cutile", "cutile-rs"]', '["cutile"]')
    root = fake.make_tree(tmp_path, tests={"test_bmm.py": no_style})
    fake.write(root / "src/tilegym/ops/cutile_rs/bmm.py", WRAPPER)
    check = check_wiring(root, "bmm", python=sys.executable, collect=False)
    (s,) = check.statuses
    assert s.state == "missing" and s.edit is not None, s.message
    assert s.edit.literal == "'cutile-rs'"  # spelled exactly as the wrapper spells it
    assert "register_impl" in s.message and "bmm.py:4" in s.message
    assert _changed_lines(s.edit.diff()) == [
        '-    _perf_frameworks = ["cutile", "pytorch"]',
        '+    _perf_frameworks = ["cutile", \'cutile-rs\', "pytorch"]',
    ]
    # a wrapper that registers another backend is no source for the spelling
    fake.write(root / "src/tilegym/ops/cutile_rs/bmm.py", WRAPPER.replace("cutile-rs", "cutile"))
    assert check_wiring(root, "bmm", python=sys.executable, collect=False).statuses[0].state == "no_style"


def test_apply_then_recollect_proves_cases(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    check = check_wiring(root, "bmm", python=sys.executable, timeout_s=120)
    assert check.selected == 0 and check.collect is not None and check.collect.ok
    edit = check.statuses[0].edit
    assert edit is not None
    result = apply_wiring(
        edit, root, [check.statuses[0].target], python=sys.executable, backup_dir=tmp_path / "bk"
    )
    assert result.applied and not result.reverted and result.selected == 16
    assert result.backup is not None and result.backup.read_text() == edit.old_source
    assert (root / "tests/ops/test_bmm.py").read_text() == edit.new_source
    assert check_wiring(root, "bmm", python=sys.executable, timeout_s=120).selected == 16


def test_apply_reverts_when_recollect_fails(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    path = root / "tests/ops/test_bmm.py"
    original = path.read_text()
    edit = _status(root).edit
    assert edit is not None
    result = apply_wiring(
        edit,
        root,
        ["tests/ops/test_bmm.py::NoSuchClass::test_perf"],
        python=sys.executable,
        backup_dir=tmp_path / "bk",
    )
    assert not result.applied and result.reverted and "original restored" in result.message
    assert path.read_text() == original


def test_apply_refuses_a_file_changed_since_the_proposal(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    path = root / "tests/ops/test_bmm.py"
    edit = _status(root).edit
    assert edit is not None
    path.write_text(path.read_text() + "\n# edited by someone else\n")
    before = path.read_text()
    with pytest.raises(InputError, match="changed since"):
        apply_wiring(edit, root, ["tests/ops/test_bmm.py"], python=sys.executable, backup_dir=tmp_path / "bk")
    assert path.read_text() == before and not (tmp_path / "bk").exists()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_cli_check_shows_the_diff_and_edits_only_with_apply(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path / "tg")
    path = root / "tests/ops/test_bmm.py"
    original = path.read_text()
    shown = _cli("check", "bmm", "--tilegym", str(root), cwd=tmp_path)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "cutile-rs perf cases selected: 0" in shown.stdout
    assert '+    _perf_frameworks = ["cutile", "cutile-rs", "pytorch"]' in shown.stdout
    assert "re-run with --apply-wiring" in shown.stdout
    assert path.read_text() == original  # nothing edited without confirmation
    out_root = tmp_path / "out"
    applied = _cli(
        "check",
        "bmm",
        "--tilegym",
        str(root),
        "--out-root",
        str(out_root),
        "--apply-wiring",
        "--yes",
        cwd=tmp_path,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "wired: 16 cutile-rs perf case(s) collected" in applied.stdout
    backups = list((out_root / "bmm" / "workbench" / "wiring_backup").iterdir())
    assert len(backups) == 1 and backups[0].read_text() == original
    again = _cli("check", "bmm", "--tilegym", str(root), cwd=tmp_path)
    assert again.returncode == 0 and "cutile-rs perf cases selected: 16" in again.stdout


def test_cli_bad_input_exits_2(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path / "tg")
    unknown = _cli("check", "bmmm", "--tilegym", str(root), cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown kernel 'bmmm'" in unknown.stderr and "bmm" in unknown.stderr
    missing = _cli("check", "bmm", "--tilegym", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert missing.returncode == 2 and "TileGym checkout not found" in missing.stderr
    (root / "tests/ops/test_bmm.py").write_text("class Broken(:\n")
    broken = _cli("check", "bmm", "--tilegym", str(root), cwd=tmp_path)
    assert broken.returncode == 2 and "test_bmm.py:1: syntax error" in broken.stderr


def test_find_test_file_searches_subdirectories(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    fake.write(root / "tests/ops/activation/test_geglu.py", "def test_perf():\n    pass\n")
    assert find_test_file(root, "geglu").name == "test_geglu.py"


@needs_tilegym
def test_real_tilegym_wiring_states() -> None:
    states = {
        k: check_wiring(TILEGYM, k, python=sys.executable, collect=False).statuses[0].state
        for k in ("bmm", "matmul", "silu_and_mul", "swiglu", "attention_sink", "rms_norm", "dropout")
    }
    # upstream lists cutile-rs behind is_backend_available("cutile-rs") in _backends → _perf_frameworks
    assert states == {
        "bmm": "wired_conditional",
        "matmul": "wired_conditional",
        "silu_and_mul": "wired_conditional",
        "swiglu": "wired_conditional",
        "attention_sink": "wired_conditional",
        "rms_norm": "no_style",
        "dropout": "no_style",
    }


@needs_tilegym
@pytest.mark.parametrize(
    ("kernel", "perf_list"),
    [("bmm", "_perf_frameworks"), ("matmul", "_perf_backends"), ("attention_sink", "_perf_backends")],
)
def test_real_test_files_with_perf_unwired(tmp_path: Path, kernel: str, perf_list: str) -> None:
    """SYNTHETIC variant of a real file: test_perf's list no longer derives from _backends."""
    (tmp_path / "src" / "tilegym").mkdir(parents=True)
    (tmp_path / "tests" / "ops").mkdir(parents=True)
    (tmp_path / "tests" / "conftest.py").write_text((TILEGYM / "tests" / "conftest.py").read_text())
    text = (TILEGYM / "tests" / "ops" / f"test_{kernel}.py").read_text()
    unwired = text.replace(f'{perf_list} = _backends + ["pytorch"]', f'{perf_list} = ["cutile", "pytorch"]')
    assert unwired != text
    path = tmp_path / "tests" / "ops" / f"test_{kernel}.py"
    path.write_text(unwired)
    check = check_wiring(tmp_path, kernel, python=sys.executable, collect=False)
    edit = check.statuses[0].edit
    assert check.statuses[0].state == "missing" and edit is not None
    assert [ln[0] + ln[1:].strip() for ln in _changed_lines(edit.diff())] == [
        f'-{perf_list} = ["cutile", "pytorch"]',
        f'+{perf_list} = ["cutile", "cutile-rs", "pytorch"]',
    ]
    if importlib.util.find_spec("torch") is None:
        # collection needs torch here: the guarded edit must be undone byte-for-byte
        result = apply_wiring(
            edit,
            tmp_path,
            [check.statuses[0].target],
            python=sys.executable,
            backup_dir=tmp_path / "bk",
            timeout_s=120,
        )
        assert result.reverted and not result.applied
        assert path.read_text() == unwired
