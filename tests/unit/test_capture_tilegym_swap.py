"""tilegym_swap: the real TileGym signature is kept, and the import hook patches ``tests.common``.

The hook test uses a tiny SYNTHETIC ``tests/common.py`` in a temp dir (no torch, no TileGym needed);
the signature test reads TileGym's real ``tests/common.py`` when the snapshot is present.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutile_workbench.run.capture import tilegym_swap

TILEGYM = Path(__file__).resolve().parents[2] / ".fetched" / "TileGym"


@pytest.mark.skipif(not (TILEGYM / "tests" / "common.py").exists(), reason="TileGym snapshot absent")
def test_signature_matches_tilegym_benchmark_fn_cupti():
    tree = ast.parse((TILEGYM / "tests" / "common.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "benchmark_fn_cupti")
    theirs = [a.arg for a in fn.args.args]
    ours = list(inspect.signature(tilegym_swap.benchmark_fn_cupti).parameters)
    assert ours == theirs


def test_install_patches_on_import_and_uninstall_restores(tmp_path):
    pkg = tmp_path / "tests"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "common.py").write_text("def benchmark_fn_cupti(fn, *a, **k):\n    return 'original'\n")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from cutile_workbench.run.capture import tilegym_swap
        tilegym_swap.install(None)
        import tests.common as c
        assert c.benchmark_fn_cupti is tilegym_swap.benchmark_fn_cupti, c.benchmark_fn_cupti
        tilegym_swap.install(None)  # idempotent once loaded
        tilegym_swap.uninstall()
        assert c.benchmark_fn_cupti(None) == 'original'
        print('ok')
    """)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2]
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_install_patches_already_imported_module(monkeypatch):
    import types

    mod = types.ModuleType("tests.common")
    mod.benchmark_fn_cupti = lambda *a, **k: "original"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tests.common", mod)
    tilegym_swap.install(None)
    assert mod.benchmark_fn_cupti is tilegym_swap.benchmark_fn_cupti  # type: ignore[attr-defined]
    tilegym_swap.uninstall()
    assert mod.benchmark_fn_cupti() == "original"  # type: ignore[attr-defined]


@pytest.mark.skipif(not (TILEGYM / "src").exists(), reason="TileGym snapshot absent")
@pytest.mark.parametrize(
    ("relpath", "name", "twin"),
    [
        ("tests/common.py", "_extract_kernel_times_from_profile", "extract_kernel_times"),
        ("src/tilegym/backend/cutile_rs/autotuner.py", "_bench_config_cupti", "bench_config_cupti"),
    ],
)
def test_twins_keep_tilegym_signatures(relpath: str, name: str, twin: str) -> None:
    from cutile_workbench.run.capture import tilegym_timing

    tree = ast.parse((TILEGYM / relpath).read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    theirs = [a.arg for a in fn.args.args]
    defaults = [ast.literal_eval(d) for d in fn.args.defaults]
    sig = inspect.signature(getattr(tilegym_timing, twin))
    assert list(sig.parameters) == theirs
    ours_defaults = [p.default for p in sig.parameters.values() if p.default is not inspect.Parameter.empty]
    assert ours_defaults == defaults


def test_every_torch_profiler_call_site_is_patched(monkeypatch) -> None:
    """All three TileGym call sites of torch.profiler get their workbench twin (SYNTHETIC modules)."""
    import types

    from cutile_workbench.run.capture import tilegym_timing

    common = types.ModuleType("tests.common")
    common.benchmark_fn_cupti = lambda *a, **k: "original"  # type: ignore[attr-defined]
    common._extract_kernel_times_from_profile = lambda fn: "original"  # type: ignore[attr-defined]
    autotuner = types.ModuleType("tilegym.backend.cutile_rs.autotuner")
    autotuner._bench_config_cupti = lambda *a, **k: "original"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tests.common", common)
    monkeypatch.setitem(sys.modules, "tilegym.backend.cutile_rs.autotuner", autotuner)
    tilegym_swap.install(None)
    try:
        assert common.benchmark_fn_cupti is tilegym_swap.benchmark_fn_cupti  # type: ignore[attr-defined]
        assert common._extract_kernel_times_from_profile is tilegym_timing.extract_kernel_times  # type: ignore[attr-defined]
        assert autotuner._bench_config_cupti is tilegym_timing.bench_config_cupti  # type: ignore[attr-defined]
    finally:
        tilegym_swap.uninstall()
    assert autotuner._bench_config_cupti() == "original"  # type: ignore[attr-defined]
    assert common._extract_kernel_times_from_profile(None) == "original"  # type: ignore[attr-defined]
