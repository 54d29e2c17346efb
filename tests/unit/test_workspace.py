"""Workspace resolution (flag > env > recorded session), gaps, lazy loaders, unsafe names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cutile_workbench.artifacts.workspace import open_workspace, recorded_session_root
from cutile_workbench.errors import InputError, UnsafePath

FIX = Path(__file__).parent.parent / "fixtures" / "e" / "real"


def copy_fixture(tmp_path: Path, name: str = "rms_norm") -> Path:
    shutil.copytree(FIX / name, tmp_path / "out" / name)
    return tmp_path / "out"


def test_resolution_order(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    other = tmp_path / "other"
    (other / "rms_norm").mkdir(parents=True)
    ws = open_workspace("rms_norm", out_root=root, env={"CUTILE_KERNEL_OUT_ROOT": str(other)})
    assert ws.kernel_dir == root / "rms_norm" and ws.source == "out_root"
    ws2 = open_workspace("rms_norm", env={"CUTILE_KERNEL_OUT_ROOT": str(other), "TILEGYM_PATH": "/tg"})
    assert ws2.kernel_dir == other / "rms_norm" and ws2.tilegym == Path("/tg")
    ws3 = open_workspace("rms_norm", out_root=root, tilegym=tmp_path, env={"TILEGYM_PATH": "/tg"})
    assert ws3.tilegym == tmp_path


def test_recorded_session_or_clear_error() -> None:
    root = recorded_session_root("rms_norm")
    if root is None:
        with pytest.raises(InputError, match="--out-root"):
            open_workspace("rms_norm", env={})
    else:
        ws = open_workspace("rms_norm", env={})
        assert ws.source == "recorded" and ws.kernel_dir == root / "rms_norm"
    with pytest.raises(InputError, match="no out root"):
        open_workspace("no_such_kernel_xyz", env={})


@pytest.mark.parametrize("name", ["..", ".", "../x", "a/b", "/abs", "", "a b", "x\0"])
def test_unsafe_kernel_names(name: str, tmp_path: Path) -> None:
    with pytest.raises(UnsafePath):
        open_workspace(name, out_root=tmp_path, env={})


def test_gaps_not_crashes(tmp_path: Path) -> None:
    ws = open_workspace("nothing_here", out_root=tmp_path, env={})
    assert [g.severity for g in ws.gaps] == ["error"] and ws.analysis is None
    (tmp_path / "empty").mkdir()
    ws = open_workspace("empty", out_root=tmp_path, env={})
    whats = {g.what.split(" ")[0]: g.severity for g in ws.gaps}
    assert (
        whats["cuTile"] == "error"
        and whats["candidate"] == "error"
        and whats["reference/analysis.json"] == "warn"
    )
    assert ws.candidate_log() is None and ws.baseline_logs() == {} and ws.raw_log_path() is None
    assert ws.reference_ir_files() == [] and ws.wrapper_source() is None and ws.session_meta() is None


def test_lazy_loaders_on_real_fixture(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    ws = open_workspace("rms_norm", out_root=root, env={})
    assert ws.analysis is not None and ws.analysis.reference_backend == "triton"
    assert set(ws.baseline_logs()) == {"cutile", "triton_tileir"}
    assert len(ws.baseline_logs()["triton_tileir"].records) == 5
    assert ws.raw_log_path() == root / "rms_norm" / "reports/agent_logs/perf_cutile_rs.full.txt"
    assert ws.candidate_log() is None  # perf_cutile_rs.txt is written by E


def test_malformed_inputs_raise_when_loaded(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    k = root / "rms_norm"
    (k / "reference/analysis.json").write_text('{"test_perf_configs": 5}')
    with pytest.raises(InputError) as ei:
        open_workspace("rms_norm", out_root=root, env={})
    assert ei.value.key == "test_perf_configs"
    ws = open_workspace("rms_norm", out_root=root, env={}, strict=False)
    assert ws.analysis is None and any(g.severity == "error" and "malformed" in g.what for g in ws.gaps)
    (k / "baseline_perf_cutile.txt").write_text("garbage\n")
    with pytest.raises(InputError):
        ws.baseline_logs()
    (k / "workbench").mkdir()
    (k / "workbench/session.json").write_text("{\n bad")
    with pytest.raises(InputError) as ei2:
        ws.session_meta()
    assert ei2.value.line == 2


def test_wrapper_and_session_meta(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    tg = tmp_path / "tg"
    (tg / "src/tilegym/ops/cutile_rs").mkdir(parents=True)
    (tg / "src/tilegym/ops/cutile_rs/rms_norm.py").write_text("# wrapper\n")
    (root / "rms_norm/workbench").mkdir()
    (root / "rms_norm/workbench/session.json").write_text(json.dumps({"gpu": "NVIDIA H200", "pytest_rc": 0}))
    ws = open_workspace("rms_norm", out_root=root, tilegym=tg, env={})
    assert ws.wrapper_source() == tg / "src/tilegym/ops/cutile_rs/rms_norm.py"
    assert ws.session_meta() == {"gpu": "NVIDIA H200", "pytest_rc": 0}


def test_open_recovers_interrupted_write(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path)
    reports = root / "rms_norm" / "reports"
    (reports / ".performance.md.wbtmp-abcd").write_text("half-written\n")
    ws = open_workspace("rms_norm", out_root=root, env={})
    assert ws.recovery == "rolled_back"
    assert not (reports / ".performance.md.wbtmp-abcd").exists()


def test_a_digest_never_opens_a_file_linked_out_of_the_kernel_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workspace.digest (every cache key's view of an input) follows the confinement rule the readers
    follow: an input that resolves outside the kernel dir is not opened (it keys as "outside", and the
    reader refuses it by name); a link inside the kernel dir keys on its target's bytes. The hostile
    fuzz (tests/fuzz/test_fuzz_hostile.py) found the digest opening /dev/zero through a planted link."""
    import os

    root = copy_fixture(tmp_path)
    kdir = root / "rms_norm"
    ws = open_workspace("rms_norm", out_root=root, env={})
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    target = ws.paths.analysis_json
    target.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside)
    opened: list[str] = []
    real_open = os.open

    def spy(path, *a, **kw):  # type: ignore[no-untyped-def]
        opened.append(os.path.realpath(path) if kw.get("dir_fd") is None else str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", spy)
    linked_out = ws.digest(target)
    assert str(outside) not in opened
    inside = kdir / "inside.json"
    inside.write_text("{}")
    target.unlink()
    target.symlink_to(inside)
    linked_in = ws.digest(target)
    assert linked_in != linked_out
    inside.write_text('{"a": 1}')
    os.utime(target, follow_symlinks=False)  # a new version of the link (the digest is kept per version)
    assert ws.digest(target) != linked_in, "a link inside the kernel dir keys on its target's bytes"
