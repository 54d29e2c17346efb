"""Architecture rules: core imports no Textual; widgets do no file/GPU I/O; the import contracts hold.

The import check runs in a fresh interpreter (this pytest process has Textual loaded already):
it imports every module under ``cutile_workbench/`` except ``cutile_workbench.tui`` and fails if ``textual``
appears in ``sys.modules``. Modules needing an optional GPU dependency (torch, cupti) may fail to
import with ImportError on CI; they are listed, and everything they import before failing still
counts.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import importlib, json, pkgutil, sys
import cutile_workbench
mods, failed = [], {}
for info in pkgutil.walk_packages(cutile_workbench.__path__, "cutile_workbench."):
    if info.name == "cutile_workbench.tui" or info.name.startswith(("cutile_workbench.tui.", "cutile_workbench.profiles.")):
        continue
    try:
        importlib.import_module(info.name)
        mods.append(info.name)
    except ImportError as e:
        failed[info.name] = str(e)
print(json.dumps({"mods": mods, "failed": failed,
                  "textual": sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))}))
"""


def test_core_modules_import_no_textual() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "cutile_workbench.model" in out["mods"] and "cutile_workbench.stages.e.stats" in out["mods"]
    assert len(out["mods"]) >= 15, out
    for name, err in out["failed"].items():  # only optional GPU deps may be missing
        assert any(dep in err for dep in ("torch", "cupti", "cuda")), (name, err)
    assert out["textual"] == [], f"core modules pulled in Textual: {out['textual'][:5]}"


_FORBIDDEN_CALLS = {"open"}
_FORBIDDEN_ATTRS = {
    "read_text",
    "write_text",
    "read_bytes",
    "write_bytes",
    "open",
    "unlink",
    "mkdir",
    "rename",
    "replace",
    "rmdir",
    "touch",
    "iterdir",
    "glob",
}
_FORBIDDEN_IMPORTS = {"subprocess", "shutil", "socket", "torch", "cupti", "pathlib", "gzip", "io", "tempfile"}


def _violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    bad: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _FORBIDDEN_CALLS:
                bad.append(f"{path.name}:{node.lineno}: {f.id}()")
            if (
                isinstance(f, ast.Attribute)
                and f.attr in _FORBIDDEN_ATTRS
                and not (
                    isinstance(f.value, ast.Name)
                    and f.value.id in {"str", "self"}  # str.replace / own methods
                )
            ):
                # ``x.replace(...)`` on strings/dataclasses is common: only flag Path-like receivers
                if f.attr == "replace":
                    continue
                bad.append(f"{path.name}:{node.lineno}: .{f.attr}()")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for n in names:
                if n.split(".")[0] in _FORBIDDEN_IMPORTS:
                    bad.append(f"{path.name}:{node.lineno}: import {n}")
    return bad


def test_widgets_do_no_file_or_gpu_io() -> None:
    files = sorted((ROOT / "cutile_workbench" / "tui" / "widgets").glob("*.py"))
    assert len(files) >= 6
    bad = [v for f in files for v in _violations(f)]
    assert bad == []


def test_violation_detector_catches_io(tmp_path: Path) -> None:
    sample = tmp_path / "w.py"
    sample.write_text("import subprocess\nfrom pathlib import Path\nopen('x')\nPath('y').read_text()\n")
    found = _violations(sample)
    assert len(found) == 4, found


# --------------------------------------------------------------------------- import contracts

_LINT = (
    "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports({config!r}, no_cache=True))"
)


def _lint_imports(cwd: Path, config: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _LINT.format(config=config)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_import_contracts_hold() -> None:
    """pyproject.toml's import-linter contracts: no cycles; the pipeline's layers (faces, services, stages,
    evidence, run/ir/history/checks, artifacts, infra, model); E never imports F; faces and widgets reach
    only what they may; the profiles reach no face."""
    proc = _lint_imports(ROOT, "pyproject.toml")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "8 kept, 0 broken" in proc.stdout


def test_every_workbench_module_is_in_a_layer() -> None:
    """A new child of cutile_workbench/ must be placed in the layers contract, or it would escape it."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")["layers"]
    named = {name.strip().strip("()") for layer in layers for name in layer.split(":")}  # (x) = optional
    present = {
        p.stem if p.is_file() else p.name
        for p in (ROOT / "cutile_workbench").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").is_file())
    }
    assert present - named == set(), f"add these to the layers contract in pyproject.toml: {present - named}"


#: the faces' and the widgets' direct imports of the core listed as debt when their contracts were added
#: (issue 21): the lists may only shrink — a new import goes behind a service instead
DEBT_CEILING = {
    "Faces (cli, tui) import only services, the model and errors": 0,
    "Widgets import only the model (and errors)": 0,
}


def test_contract_debt_only_shrinks() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}
    assert "Stage F sits on stage E: stages/e never imports stages/f" in contracts
    for name, ceiling in DEBT_CEILING.items():
        ignored = contracts[name].get("ignore_imports", [])
        assert len(ignored) <= ceiling, f"{name}: {len(ignored)} ignored imports > {ceiling}; use a service"
        assert all(" -> " in rule and "*" not in rule for rule in ignored), "debt is listed import by import"


def test_forbidden_contracts_catch_a_direct_face_import(tmp_path: Path) -> None:
    """A face importing the core directly breaks the faces contract; through a service it does not."""
    pkg = tmp_path / "demo"
    for sub in ("cli", "services", "stages"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "stages" / "e.py").write_text("")
    (pkg / "services" / "s.py").write_text("import demo.stages.e\n")
    (pkg / "cli" / "ok.py").write_text("import demo.services.s\n")
    contracts = (
        '[tool.importlinter]\nroot_packages = ["demo"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "faces"\ntype = "forbidden"\n'
        'source_modules = ["demo.cli"]\nforbidden_modules = ["demo.stages"]\nallow_indirect_imports = true\n'
    )
    (tmp_path / "contracts.toml").write_text(contracts)
    assert _lint_imports(tmp_path, "contracts.toml").returncode == 0
    (pkg / "cli" / "bad.py").write_text("import demo.stages.e\n")
    proc = _lint_imports(tmp_path, "contracts.toml")
    assert proc.returncode == 1 and "0 kept, 1 broken" in proc.stdout, proc.stdout[-3000:]


def test_import_contracts_catch_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    """The contract types used above do fail: a synthetic two-module cycle and a core → face import."""
    pkg = tmp_path / "demo"
    (pkg / "cli").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from demo import b\n")
    (pkg / "b.py").write_text("def f():\n    from demo import a\n")
    (pkg / "core.py").write_text("import demo.cli\n")
    (tmp_path / "contracts.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["demo"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "cycles"\ntype = "acyclic_siblings"\nancestors = ["demo"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "layers"\ntype = "layers"\ncontainers = ["demo"]\n'
        'layers = ["cli", "a : b : core"]\n'
    )
    proc = _lint_imports(tmp_path, "contracts.toml")
    assert proc.returncode == 1 and "0 kept, 2 broken" in proc.stdout, proc.stdout[-3000:]


def test_a_workspace_parameter_is_typed_as_one() -> None:
    """``ws`` means a Workspace: annotated ``Any`` it hides every attribute error from mypy."""
    loose = []
    for path in sorted((ROOT / "cutile_workbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                    if (
                        arg.arg == "ws"
                        and isinstance(arg.annotation, ast.Name)
                        and arg.annotation.id == "Any"
                    ):
                        loose.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert loose == []
