"""Packaging facts of pyproject.toml: one import package, the version written once, the entry points."""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once_in_the_package() -> None:
    project = CONFIG["project"]
    assert "version" not in project and "version" in project.get("dynamic", [])
    source = ROOT / CONFIG["tool"]["hatch"]["version"]["path"]
    assigned = [
        n
        for n in ast.parse(source.read_text(encoding="utf-8")).body
        if isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in n.targets)
    ]
    assert len(assigned) == 1


def test_one_top_level_import_name_and_the_entry_points_point_into_it() -> None:
    assert CONFIG["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["cutile_workbench"]
    points = [
        CONFIG["project"]["scripts"]["cutile-workbench"],
        CONFIG["project"]["entry-points"]["pytest11"]["cutile_workbench"],
        CONFIG["project"]["entry-points"]["pygments.lexers"]["mlir"],
    ]
    for value in points:
        module = value.split(":")[0]
        assert module.startswith("cutile_workbench."), value
        path = ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), value
