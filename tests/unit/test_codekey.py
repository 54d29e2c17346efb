"""Derived caches keyed on the code that derives them, by import closure (issue 35, item 3).

Every test session starts with an empty user cache, so no ordinary test can see a stale hit after an
upgrade. These tests copy the package, edit ONE module of the copy, and run the copy in a child
process against a shared cache dir: a module the derivation imports (even indirectly: the bootstrap
under E's stats) must turn the next load into a miss; a module it cannot reach (the TUI) must not.
The inputs are the REAL rms_norm H200 session (read-only, from this checkout).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cutile_workbench.infra import codekey
from cutile_workbench.infra.codekey import code_key, import_closure

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "cutile_workbench"
SESSION = PKG / "profiles/rms_norm/session"
E_ROOTS = ("cutile_workbench.stages.e.e_table",)
REGRESS = ("cutile_workbench.history.regress",)


def test_the_closure_reaches_what_the_hand_lists_left_out() -> None:
    e = import_closure(E_ROOTS)
    for name in (  # the issue: E's key left out the bootstrap, the test ids and the printer
        "cutile_workbench.infra.bootstrap",
        "cutile_workbench.artifacts.testids",
        "cutile_workbench.artifacts.perflog.printer",
        "cutile_workbench.stages.e.stats",
        "cutile_workbench.stages.e",  # a package's __init__ runs on import
    ):
        assert name in e, name
    assert not [m for m in e if m.startswith("cutile_workbench.tui")]
    assert "cutile_workbench.infra.bootstrap" in import_closure(REGRESS)


def test_every_module_a_key_names_exists() -> None:
    """history/regress keyed on a ``stats.py`` that no longer existed: a name with no file is a bug."""
    for roots in (
        E_ROOTS,
        REGRESS,
        ("cutile_workbench.services.stage_e", "cutile_workbench.services.history"),
    ):
        for name in import_closure(roots):
            assert codekey._file_of(name, PKG) is not None, name


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "copy" / "cutile_workbench"

    def skip(directory: str, names: list[str]) -> set[str]:
        # the recorded sessions (profiles/*/session) are data, not code; stages/session is code
        recorded = "profiles" in Path(directory).relative_to(PKG).parts
        return {n for n in names if n == "__pycache__" or (recorded and n == "session")}

    shutil.copytree(PKG, dest, ignore=skip)
    return dest


def _append(path: Path, text: str = "\n# edited\n") -> None:
    path.write_text(path.read_text() + text)


def test_an_edit_in_the_closure_changes_the_key_one_outside_does_not(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    codekey.clear()
    assert code_key(E_ROOTS, copy) == code_key(E_ROOTS)  # same bytes, same key
    _append(copy / "tui/app.py")
    codekey.clear()
    assert code_key(E_ROOTS, copy) == code_key(E_ROOTS)  # E cannot reach the TUI
    _append(copy / "infra/bootstrap.py")
    codekey.clear()
    assert code_key(E_ROOTS, copy) != code_key(E_ROOTS)
    assert code_key(REGRESS, copy) != code_key(REGRESS)


_CHILD = """
import json, sys
from pathlib import Path

import pytest
import cutile_workbench
from cutile_workbench.services import stage_e
from cutile_workbench.stages.e import e_table
from cutile_workbench.history.entries import ConfigResult
from cutile_workbench.history.regress import comparison_key
ws = stage_e.open_kernel("rms_norm", out_root=Path(sys.argv[1]), tilegym=None)
t = e_table.load_e_table(ws, n_boot=10)
a = ConfigResult("f", "p", "cutile", "forward", "n", 1.0)
print(json.dumps({"pkg": cutile_workbench.__file__, "from_cache": t.from_cache,
                  "regress": comparison_key(a, a)}))
"""


def _load_in_child(copy: Path, cache: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(copy.parent), "CUTILE_WORKBENCH_CACHE": str(cache)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(SESSION)],
        env=env,
        cwd=copy.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    assert Path(str(doc["pkg"])).resolve().is_relative_to(copy.resolve())  # the copy ran, not the checkout
    return doc


def test_an_edited_module_in_a_copy_is_a_cache_miss_only_when_the_table_imports_it(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    cache = tmp_path / "cache"
    first = _load_in_child(copy, cache)
    assert first["from_cache"] is False
    seen = first
    for module, miss in (
        ("tui/app.py", False),  # unreachable from E's table: still a hit
        ("infra/bootstrap.py", True),  # under E's stats: not in the old hand list
        ("artifacts/testids.py", True),  # under the parser: not in the old hand list
    ):
        _append(copy / module)
        edited = _load_in_child(copy, cache)
        assert edited["from_cache"] is (not miss), module
        dotted = "cutile_workbench." + module.removesuffix(".py").replace("/", ".")
        assert (edited["regress"] != seen["regress"]) is (dotted in import_closure(REGRESS)), module
        seen = edited


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_a_stored_table_with_a_non_finite_number_is_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: float
) -> None:
    """A cache file of the right key whose table holds inf/nan (planted, SYNTHETIC) is not trusted."""
    import re

    from cutile_workbench.services import stage_e
    from cutile_workbench.stages.e import e_table

    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "cache"))
    e_table._MEMORY.clear()
    ws = stage_e.open_kernel("rms_norm", out_root=SESSION, tilegym=None)
    first = e_table.load_e_table(ws, n_boot=10)
    stored = tmp_path / "cache" / "e_tables" / f"{first.key}.json"
    text = stored.read_text()
    # the first row's ci_high planted as a non-finite number (JSON's own spellings of inf and nan)
    planted, n = re.subn(
        r'("ci_high":)[-0-9.eE+]+', r"\g<1>" + ("1e999" if bad == float("inf") else "NaN"), text, count=1
    )
    assert n == 1, "the stored table has no ci_high number to plant"
    stored.write_text(planted)
    e_table._MEMORY.clear()
    again = e_table.load_e_table(stage_e.open_kernel("rms_norm", out_root=SESSION, tilegym=None), n_boot=10)
    assert not again.from_cache and again.table == first.table
