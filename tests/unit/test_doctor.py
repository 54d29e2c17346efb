"""``doctor`` and the preflight of ``run`` / ``probe`` / ``report f --demonstrate`` (issue 36).

The child Python without pytest is SYNTHETIC: a ``venv --without-pip`` of this interpreter (no site
packages), i.e. the venv the README's first set-up command makes on a GPU node before the ``dev``
extra. The TileGym tree is the real snapshot (75a1430) where the test needs one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tilegym_snapshot import needs_test_files

from cutile_workbench.cli import main
from cutile_workbench.services.doctor import CHECK_ORDER, DoctorRequest, diagnose, preflight

PROFILES = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles"
TILEGYM = Path(__file__).resolve().parents[2] / ".fetched" / "TileGym"
needs_tilegym = needs_test_files()


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """SYNTHETIC: a Python with no pytest (a venv without pip or site packages)."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    probe = subprocess.run([str(py), "-c", "import pytest"], capture_output=True)
    assert probe.returncode != 0, "the synthetic child Python must not have pytest"
    return str(py)


def test_preflight_names_missing_pytest_with_the_exact_fix(bare_python: str) -> None:
    failing = preflight("run", python=bare_python)
    assert failing is not None and failing.key == "pytest"
    assert failing.fix == f"{bare_python} -m pip install pytest"
    assert preflight("run", python=sys.executable) is None


def test_run_refuses_before_any_gpu_work_or_write(
    bare_python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_root = tmp_path / "out"
    out_root.mkdir()
    rc = main(["run", "rms_norm", "--out-root", str(out_root), "--python", bare_python, "--skip-gpu-check"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "FAIL pytest in the child" in err and f"fix: {bare_python} -m pip install pytest" in err
    assert list(out_root.iterdir()) == []  # nothing written, no kernel dir made


def test_run_refuses_a_python_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "run",
            "rms_norm",
            "--out-root",
            str(tmp_path),
            "--python",
            str(tmp_path / "nope"),
            "--skip-gpu-check",
        ]
    )
    assert rc == 2
    assert "FAIL child Python" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_probe_refuses_a_child_without_pytest(
    bare_python: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    shutil.copytree(PROFILES / "rms_norm" / "session" / "rms_norm", tmp_path / "rms_norm")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    monkeypatch.setattr(sys, "executable", bare_python)  # probe's child is this Python
    rc = main(["probe", "rms_norm", "--out-root", str(tmp_path), "--config", "4096-1024-torch.bfloat16"])
    assert rc == 2, capsys.readouterr()
    assert "FAIL pytest in the child" in capsys.readouterr().err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_demonstrate_without_tilegym_refuses_before_writing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from history_helpers import RECORDED_TILEGYM

    monkeypatch.delenv("TILEGYM_PATH", raising=False)
    shutil.copytree(RECORDED_TILEGYM / "matmul", tmp_path / "matmul")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    rc = main(["report", "f", "matmul", "--out-root", str(tmp_path), "--demonstrate", "--yes"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "FAIL TileGym tree" in err and "fix: pass --tilegym" in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_doctor_lists_every_check_in_order_and_exits_1_when_one_fails(
    bare_python: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TILEGYM_PATH", raising=False)
    rc = main(["doctor", "--python", bare_python, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and data["ready"] is False
    keys = [c["key"] for c in data["checks"]]
    assert keys == [k for k in CHECK_ORDER if k in keys]  # the order a run needs them
    by_key = {c["key"]: c for c in data["checks"]}
    assert (
        by_key["pytest"]["status"] == "fail"
        and by_key["pytest"]["fix"] == f"{bare_python} -m pip install pytest"
    )
    assert by_key["torch"]["status"] == "fail" and bare_python in by_key["torch"]["fix"]
    assert (
        by_key["nvml"]["status"] == "warn"
        and by_key["nvml"]["fix"] == f"{bare_python} -m pip install nvidia-ml-py"
    )
    assert by_key["tilegym"]["status"] == "skip" and by_key["slurm"]["status"] == "skip"
    for c in data["checks"]:
        assert c["status"] in ("ok", "fail", "warn", "skip")
        assert (c["fix"] is not None) == (c["status"] in ("fail", "warn")), c


def test_doctor_text_is_one_line_per_check_then_the_summary(
    bare_python: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(["doctor", "--python", bare_python])
    lines = capsys.readouterr().out.splitlines()
    assert rc == 1
    assert lines[-1].startswith("ready: no (")
    assert any(ln.startswith("FAIL pytest in the child:") and "— fix: " in ln for ln in lines)


@needs_tilegym
def test_doctor_on_the_real_tilegym_tree_names_the_unbuilt_cutile_rs_library(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = diagnose(DoctorRequest(python=sys.executable, tilegym=TILEGYM))
    by_key = {c.key: c for c in report.checks}
    assert by_key["tilegym"].status == "ok"
    rs = by_key["cutile-rs"]
    # the snapshot pins cutile = "=0.2.0" and ships no built library
    assert rs.status == "fail" and "cutile 0.2.0" in rs.detail
    assert (
        rs.fix
        == f"cargo build --release --manifest-path {TILEGYM / 'src/tilegym/ops/cutile_rs/cutile_kernels/Cargo.toml'}"
    )
    assert by_key["tilegym-import"].status == "fail"
    assert by_key["tilegym-import"].fix == f"{sys.executable} -m pip install -e {TILEGYM}"


def test_doctor_on_a_dir_that_is_not_tilegym(tmp_path: Path) -> None:
    report = diagnose(DoctorRequest(python=sys.executable, tilegym=tmp_path))
    by_key = {c.key: c for c in report.checks}
    assert by_key["tilegym"].status == "fail" and "no tests/ops/" in by_key["tilegym"].detail


def _stub(bin_dir: Path, name: str, line: str) -> None:
    """SYNTHETIC ``name --version`` printing ``line`` (ptxas's format)."""
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / name
    exe.write_text(f"#!/bin/sh\necho '{line}'\n")
    exe.chmod(0o755)


def test_a_ptxas_older_than_tileiras_fails_with_the_cuda_home_fix(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _stub(bin_dir, "tileiras", "Cuda compilation tools, release 13.4, V13.4.92")
    _stub(bin_dir, "ptxas", "Cuda compilation tools, release 13.0, V13.0.88")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    by_key = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, env=env)).checks}
    assert by_key["tileiras"].status == "ok"
    ptxas = by_key["ptxas"]
    assert ptxas.status == "fail" and "older than tileiras 13.4" in ptxas.detail
    assert ptxas.fix is not None and ptxas.fix.startswith("export CUDA_HOME=")
    _stub(bin_dir, "ptxas", "Cuda compilation tools, release 13.4, V13.4.92")
    by_key = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, env=env)).checks}
    assert by_key["ptxas"].status == "ok"


def _trimmed_tree(tmp_path: Path, commit_text: str | None) -> Path:
    """SYNTHETIC: what bench/make_tilegym_trim.sh unpacks on the GPU node: tests/ops/, no .git, and
    (when given) a TILEGYM_COMMIT file."""
    tree = tmp_path / "TileGym"
    (tree / "tests" / "ops").mkdir(parents=True)
    if commit_text is not None:
        (tree / "TILEGYM_COMMIT").write_text(commit_text)
    return tree


def test_doctor_reads_the_commit_of_a_trimmed_tree_from_tilegym_commit(tmp_path: Path) -> None:
    """On the H200 the trimmed tree said 'at unknown commit': it has no .git, only TILEGYM_COMMIT."""
    sha = "75a14307776188ff0baf451cd9b9fc9fa3a87233"
    tree = _trimmed_tree(tmp_path, sha + "\n")
    by_key = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, tilegym=tree)).checks}
    assert by_key["tilegym"].status == "ok"
    assert f"at {sha[:12]}" in by_key["tilegym"].detail and "TILEGYM_COMMIT" in by_key["tilegym"].detail


@pytest.mark.parametrize("text", ["not a sha\n", "", "75a1430" * 100])
def test_doctor_does_not_trust_a_bad_tilegym_commit_file(tmp_path: Path, text: str) -> None:
    tree = _trimmed_tree(tmp_path, text)
    detail = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, tilegym=tree)).checks}[
        "tilegym"
    ].detail
    assert "unknown commit" in detail and "TILEGYM_COMMIT" in detail


@needs_tilegym
def test_doctor_names_the_commit_of_the_real_snapshot_without_git() -> None:
    """REAL: the TileGym snapshot (.fetched/TileGym) is a tree without .git, with its TILEGYM_COMMIT."""
    assert not (TILEGYM / ".git").exists()
    want = (TILEGYM / "TILEGYM_COMMIT").read_text().split()[0]
    detail = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, tilegym=TILEGYM)).checks}[
        "tilegym"
    ].detail
    assert f"at {want[:12]}" in detail


def test_doctor_test_imports_cuda_tile_in_the_child(bare_python: str) -> None:
    """SYNTHETIC child without cuda.tile: a row says so, with the fix (find_spec alone never said)."""
    by_key = {c.key: c for c in diagnose(DoctorRequest(python=bare_python)).checks}
    row = by_key["cuda-tile"]
    assert row.status == "warn" and "cuda.tile" in row.detail
    assert row.fix == f"{bare_python} -m pip install cuda-tile"


def test_doctor_reports_a_cuda_tile_that_fails_to_import(tmp_path: Path) -> None:
    """SYNTHETIC: a cuda.tile package that is found but raises on import (a CUDA library mismatch)."""
    site = tmp_path / "site"
    (site / "cuda" / "tile").mkdir(parents=True)
    (site / "cuda" / "tile" / "__init__.py").write_text("raise ImportError('libcuda.so.1: cannot open')\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    by_key = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, env=env)).checks}
    row = by_key["cuda-tile"]
    assert row.status == "warn" and "libcuda.so.1: cannot open" in row.detail


def _built_tree(tmp_path: Path) -> Path:
    """SYNTHETIC trimmed tree with the cutile-rs crate and a 'built' library (a stand-in file)."""
    from cutile_workbench.history.provenance import CUTILE_RS_LIB
    from cutile_workbench.services.doctor import KERNELS_CRATE

    tree = _trimmed_tree(tmp_path, None)
    crate = tree / KERNELS_CRATE
    crate.mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "cutile_kernels"\n\n[dependencies]\ncutile = "=0.2.0"\n'
    )
    (tree / CUTILE_RS_LIB).parent.mkdir(parents=True, exist_ok=True)
    (tree / CUTILE_RS_LIB).write_bytes(b"\x7fELF stand-in")
    return tree


def test_library_arch_against_the_gpu(tmp_path: Path) -> None:
    from cutile_workbench.services.doctor import library_arch_check

    lib = tmp_path / "libcutile_kernels.so"
    lib.write_bytes(b"\x7fELF")
    listing = (
        "ELF file    1: libcutile_kernels.1.sm_90a.cubin\nELF file    2: libcutile_kernels.2.sm_80.cubin\n"
    )
    ok = library_arch_check(lib, "9.0", lambda _lib: (listing, None))
    assert ok.status == "ok" and "sm_90" in ok.detail
    bad = library_arch_check(lib, "10.0", lambda _lib: (listing, None))
    assert bad.status == "warn" and "sm_100" in bad.detail and bad.fix
    none = library_arch_check(lib, "9.0", lambda _lib: ("", None))
    assert none.status == "ok" and "cannot tell" in none.detail
    no_tool = library_arch_check(lib, "9.0", lambda _lib: (None, "cuobjdump not on PATH"))
    assert (
        no_tool.status == "ok"
        and "cannot tell" in no_tool.detail
        and "cuobjdump not on PATH" in no_tool.detail
    )
    no_gpu = library_arch_check(lib, None, lambda _lib: (listing, None))
    assert "cannot tell" in no_gpu.detail or "no GPU" in no_gpu.detail


def test_doctor_on_a_built_tree_says_what_it_can_of_the_arch(tmp_path: Path) -> None:
    tree = _built_tree(tmp_path)
    by_key = {c.key: c for c in diagnose(DoctorRequest(python=sys.executable, tilegym=tree)).checks}
    rs = by_key["cutile-rs"]
    assert rs.status == "ok" and "built" in rs.detail and "arch" in rs.detail, rs.detail
