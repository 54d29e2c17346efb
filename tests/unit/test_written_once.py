"""Each rule written once (issue 30 item 5): the atomic write, the IR op lists, the overview's columns.

The first two read the package's source (AST); the third runs the CLI's overview on a copy of the
REAL recorded matmul session (cuTile vs cutile-rs on an H200).
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from cutile_workbench import model
from cutile_workbench.ir import audit, graph

PKG = Path(__file__).resolve().parents[2] / "cutile_workbench"
MATMUL = PKG / "profiles/tilegym/session/matmul"

#: the temp-file-and-rename writes that are not infra.atomicio's, each for a reason it cannot serve
RENAMES_ALLOWED = {
    "infra/atomicio.py": "THE atomic write (unconfined branch)",
    "infra/paths.py": "THE atomic write (by descriptor, confined)",
    "artifacts/writer.py": "a journaled multi-file commit and its recovery (several files, one commit point)",
    "run/scaleout/merge.py": "the shards' raw logs streamed into one (GBs: never held in memory)",
}


def _calls_named(tree: ast.AST, names: set[str]) -> list[int]:
    return [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
        and f"{n.func.value.id}.{n.func.attr}" in names
    ]


def test_temp_file_and_rename_is_written_once() -> None:
    """A module that renames a temp file over its target outside the allowed list is a second atomic write."""
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        lines = _calls_named(ast.parse(path.read_text(encoding="utf-8")), {"os.replace", "os.rename"})
        if lines and rel not in RENAMES_ALLOWED:
            found[rel] = lines
    assert found == {}, f"use cutile_workbench.infra.atomicio.atomic_write_bytes instead: {found}"


def _string_sets(tree: ast.AST) -> list[tuple[int, set[str]]]:
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Set | ast.Tuple | ast.List) and len(n.elts) >= 3:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.elts):
                out.append((n.lineno, {str(e.value) for e in n.elts if isinstance(e, ast.Constant)}))
    return out


def test_the_critical_and_memory_op_lists_are_spelled_once() -> None:
    """diff_ir.sh's op rows live in ir/audit.py, the dialect's memory ops in ir/graph.py; the
    structural diff's matcher and categories use those, they do not spell them again."""
    critical = set(audit.CRITICAL_OPS) | set(graph.MEMORY_OPS)
    homes = {"ir/audit.py", "ir/graph.py"}
    copies = {}
    for path in sorted((PKG / "ir").glob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in homes:
            continue
        for line, names in _string_sets(ast.parse(path.read_text(encoding="utf-8"))):
            if len(names & critical) >= 3:
                copies[f"{rel}:{line}"] = sorted(names & critical)
    assert copies == {}


def test_the_audit_rows_the_diff_names_are_the_audit_tables() -> None:
    from cutile_workbench.ir import structdiff

    assert structdiff._AUDIT_OPS == frozenset(audit.CRITICAL_OPS + audit.ARITH_OPS + audit.INFO_OPS) - {"mma"}
    assert structdiff._MEM_OPS is graph.MEMORY_OPS


def test_the_cli_and_the_tui_show_the_models_overview_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cutile_workbench.cli import main

    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "out"
    shutil.copytree(MATMUL, root / "matmul")
    assert main(["overview", "--out-root", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, row = lines[1], lines[2]
    starts = [header.index(c) for c in model.OVERVIEW_COLUMNS]
    assert starts == sorted(starts), f"CLI header {header!r} is not in the model's order"
    cells = dict(
        zip(
            model.OVERVIEW_COLUMNS,
            (row[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)),
            strict=True,
        )
    )
    assert cells["kernel"] == "matmul" and cells["from"] in ("md", "logs", "logs*")
    assert cells["matched"].count("/") == 1 and cells["E"] and cells["geomean"][0].isdigit()
    pytest.importorskip("textual")
    from cutile_workbench.tui.widgets import overview_table

    assert tuple(overview_table.COLUMNS) == model.OVERVIEW_COLUMNS
