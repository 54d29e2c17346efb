"""``cutile-workbench probe`` and ``services.probe`` on the REAL recorded silu_and_mul session.

- REAL: cutile_workbench/profiles/tilegym/session/silu_and_mul (TileGym's test_perf on the H200, per-launch captures
  naming both kernels) and the REAL ncu CSVs of tests/fixtures/f (one call of each side at
  64-1024-4096 fp16, H200 2026-12-01).
- SYNTHETIC stand-ins for the GPU tools (no GPU here): a fake ``ncu`` that writes the real CSV of the
  side its ``-k`` filter names to its ``--log-file`` and records its argv, and a fake ``nvidia-smi``
  that lists one GPU. They exercise the command line, the child run, the timeout and the filing; the
  numbers they yield are the real H200 ones. The real end-to-end probe is the ``gpu`` test in
  tests/unit/test_f_ncu_sol.py.
- A TileGym tree holding only TileGym 75a1430's tests/ops/test_silu_and_mul.py excerpt (the probe
  only checks the test file exists; the fake ncu runs nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from cutile_workbench.cli import main

HERE = Path(__file__).parent.parent
SESSION = HERE.parent / "cutile_workbench" / "profiles" / "tilegym" / "session"
FIX = HERE / "fixtures" / "f"
CONFIG = "64-1024-4096-torch.float16"

FAKE_NCU = '''#!{python}
"""SYNTHETIC ncu: copies the REAL H200 CSV of the side -k names to --log-file; records argv."""
import json, os, shutil, sys, time
argv = sys.argv[1:]
with open(os.environ["FAKE_NCU_LOG"], "a") as f:
    f.write(json.dumps({{"argv": argv, "env": {{k: os.environ.get(k) for k in
                        ("DISABLE_FALLBACK", "WORKBENCH_PROFILE_RANGE", "WORKBENCH_CAPTURE", "CUPTI")}},
                        "cwd": os.getcwd()}}) + "\\n")
if os.environ.get("FAKE_NCU_SLEEP"):
    time.sleep(float(os.environ["FAKE_NCU_SLEEP"]))
kernel = argv[argv.index("-k") + 1]
side = "cutile_rs" if "silu_and_mul_kernel_entry" in kernel else "cutile"
shutil.copyfile(os.path.join({fix!r}, "ncu_silu_and_mul_" + side + ".csv.log"), argv[argv.index("--log-file") + 1])
print("==PROF== Disconnected")
'''
FAKE_SMI = """#!/bin/sh
echo "GPU 0: NVIDIA H200 (UUID: GPU-synthetic)"
"""


def _tilegym(tmp_path: Path) -> Path:
    tg = tmp_path / "tilegym"
    (tg / "tests" / "ops").mkdir(parents=True)
    shutil.copyfile(
        FIX / "tilegym_75a1430" / "tests" / "ops" / "test_silu_and_mul.py",
        tg / "tests" / "ops" / "test_silu_and_mul.py",
    )
    return tg


def _out_root(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    shutil.copytree(SESSION / "silu_and_mul", root / "silu_and_mul")
    return root


def _tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, ncu: bool = True) -> Path:
    """A PATH holding only the fake tools (and sh): no real ncu or nvidia-smi can be picked up."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if ncu:
        (bin_dir / "ncu").write_text(FAKE_NCU.format(python=sys.executable, fix=str(FIX)))
        (bin_dir / "ncu").chmod(0o755)
        (bin_dir / "nvidia-smi").write_text(FAKE_SMI)
        (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/bin{os.pathsep}/usr/bin")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "ncu_calls.jsonl"))
    monkeypatch.delenv("TILEGYM_PATH", raising=False)
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    return tmp_path / "ncu_calls.jsonl"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_tilegym_kernel_needs_the_checkout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch)
    rc, _out, err = _run(
        capsys, "probe", "silu_and_mul", "--config", CONFIG, "--out-root", str(_out_root(tmp_path))
    )
    assert rc == 2 and "TileGym kernel" in err and "--tilegym DIR or set $TILEGYM_PATH" in err


def test_the_recorded_session_is_refused_with_es_message_but_can_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _tools(tmp_path, monkeypatch)
    before = _listing(SESSION)
    tg = str(_tilegym(tmp_path))
    rc, _out, err = _run(capsys, "probe", "silu_and_mul", "--config", CONFIG, "--tilegym", tg)
    assert rc == 2 and "the recorded session is read-only; copy it (cp -r" in err and "--print-command" in err
    e_rc, _e_out, e_err = _run(capsys, "report", "e", "silu_and_mul", "--yes", "--no-real-scripts")
    assert e_rc == 2 and err.split(", or use")[0] == e_err.split(", or use")[0]  # E's message, word for word
    rc, out, _err = _run(
        capsys, "probe", "silu_and_mul", "--config", CONFIG, "--tilegym", tg, "--print-command"
    )
    assert rc == 0 and out.count("\n$ cd ") == 2 and not calls.exists()  # printed, nothing run
    assert _listing(SESSION) == before


def test_without_ncu_it_exits_2_and_prints_the_exact_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch, ncu=False)
    root = _out_root(tmp_path)
    rc, out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        str(root),
        "--tilegym",
        str(_tilegym(tmp_path)),
    )
    assert rc == 2 and "ncu (Nsight Compute) is not on PATH" in err and "--csv FILE" in err
    lines = [ln[2:] for ln in out.splitlines() if ln.startswith("$ ")]
    assert len(lines) == 2
    cand, ref = lines
    assert "-k 'regex:^silu_and_mul_kernel_entry$'" in cand and "DISABLE_FALLBACK=1" in cand
    assert "test_perf[cutile_rs-64-1024-4096-torch.float16]" in cand and "--workbench-harness" in cand
    assert "-k 'regex:^_silu_and_mul_kernel_row_wise_Kt1_" in ref and "DISABLE_FALLBACK" not in ref
    assert f"--log-file {root / 'silu_and_mul' / 'workbench' / 'probes'}" in cand
    assert not (root / "silu_and_mul" / "workbench" / "probes").exists()  # nothing filed


def test_probe_runs_both_sides_files_them_and_f_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _tools(tmp_path, monkeypatch)
    root = _out_root(tmp_path)
    tg = _tilegym(tmp_path)
    rc, out, err = _run(
        capsys, "probe", "silu_and_mul", "--config", CONFIG, "--out-root", str(root), "--tilegym", str(tg)
    )
    assert rc == 0, err
    runs = [json.loads(ln) for ln in calls.read_text().splitlines()]
    assert [r["env"]["DISABLE_FALLBACK"] for r in runs] == ["1", None]
    assert all(r["cwd"] == str(tg.resolve()) and r["env"]["WORKBENCH_PROFILE_RANGE"] == "1" for r in runs)
    probes = root / "silu_and_mul" / "workbench" / "probes"
    assert sorted(p.name for p in probes.iterdir()) == [
        f"cutile-{CONFIG}.csv",
        f"cutile-{CONFIG}.json",
        f"cutile_rs-{CONFIG}.csv",
        f"cutile_rs-{CONFIG}.json",
    ]
    table = out.split("\n\n", 1)[1]
    assert table.splitlines()[0].split() == ["metric", "cutile-rs", "cutile"]
    assert "duration" in table and "382.72 us" in table and "397.73 us" in table and "104" in table
    # F reads the filed probes: its report gets the side-by-side section
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.stages.f.inputs import collect_inputs
    from cutile_workbench.stages.f.render import probe_lines

    inputs = collect_inputs(open_workspace("silu_and_mul", out_root=root, tilegym=tg))
    assert {k[0] for k in inputs.probes} == {"cutile_rs", "cutile"}
    from cutile_workbench.evidence.ncu import probe_for

    lines = probe_lines(
        (probe_for(inputs.probes, "cutile-rs", CONFIG), probe_for(inputs.probes, "cutile", CONFIG))
    )
    assert "| duration | 382.72 us | 397.73 us |" in lines


def test_a_csv_from_the_printed_line_is_filed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch, ncu=False)
    root = _out_root(tmp_path)
    tg = str(_tilegym(tmp_path))
    csv = FIX / "ncu_silu_and_mul_cutile.csv.log"
    rc, out, _err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        str(root),
        "--tilegym",
        tg,
        "--backend",
        "cutile",
        "--csv",
        str(csv),
    )
    assert rc == 0 and f"filed workbench/probes/cutile-{CONFIG}.json from {csv}" in out
    doc = json.loads((root / "silu_and_mul" / "workbench" / "probes" / f"cutile-{CONFIG}.json").read_text())
    assert doc["probe"]["device"] == "NVIDIA H200" and doc["probe"]["backend"] == "cutile"
    assert "| " not in out and "397.73 us" in out and "n/a" in out  # the candidate side is not probed yet
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        str(root),
        "--tilegym",
        tg,
        "--csv",
        str(csv),
    )
    assert rc == 2 and "exactly one --backend" in err
    (tmp_path / "empty.csv").write_text("==PROF== Disconnected\n")
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        str(root),
        "--tilegym",
        tg,
        "--backend",
        "cutile-rs",
        "--csv",
        str(tmp_path / "empty.csv"),
    )
    assert rc == 2 and "empty.csv:1" in err and "profiled nothing" in err


def test_bad_config_backend_and_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tools(tmp_path, monkeypatch)
    root, tg = str(_out_root(tmp_path)), str(_tilegym(tmp_path))
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        "64-1024-4095-torch.float16",
        "--out-root",
        root,
        "--tilegym",
        tg,
    )
    assert rc == 2 and "unknown config" in err and "close matches: 64-1024-4096-torch.float16" in err
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        root,
        "--tilegym",
        tg,
        "-b",
        "triton",
    )
    assert rc == 2 and "neither side" in err
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        root,
        "--tilegym",
        tg,
        "--timeout",
        "0",
    )
    assert rc == 2 and "must be a number of seconds > 0" in err
    monkeypatch.setenv("FAKE_NCU_SLEEP", "30")
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        root,
        "--tilegym",
        tg,
        "-b",
        "cutile-rs",
        "--timeout",
        "1",
    )
    assert rc == 2 and "killed after 1 s" in err
    assert not (Path(root) / "silu_and_mul" / "workbench" / "probes" / f"cutile_rs-{CONFIG}.json").exists()


def test_a_csv_of_another_kernel_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The REAL cuTile CSV offered as the cutile-rs side: its kernel row is not that side's kernel."""
    _tools(tmp_path, monkeypatch, ncu=False)
    root = _out_root(tmp_path)
    rc, _out, err = _run(
        capsys,
        "probe",
        "silu_and_mul",
        "--config",
        CONFIG,
        "--out-root",
        str(root),
        "--tilegym",
        str(_tilegym(tmp_path)),
        "--backend",
        "cutile-rs",
        "--csv",
        str(FIX / "ncu_silu_and_mul_cutile.csv.log"),
    )
    assert (
        rc == 2 and "not this side's kernel silu_and_mul_kernel_entry" in err and "key 'Kernel Name'" in err
    )
    assert not (root / "silu_and_mul" / "workbench" / "probes").exists()


@pytest.mark.gpu
def test_probe_of_the_real_matmul_gap_on_the_gpu(tmp_path: Path) -> None:
    """GPU + ncu + a TileGym checkout with the cutile-rs library ($TILEGYM_PATH): ncu on one call of each
    side of static_persistent 2048^3 (the recorded 2.04x gap). The probe must see the kernels the CUPTI
    captures recorded: same registers and grid, and a duration of the same order as their per-launch time."""
    import subprocess

    tg = os.environ.get("TILEGYM_PATH")
    if shutil.which("ncu") is None or shutil.which("nvidia-smi") is None or not tg:
        pytest.skip("needs ncu, an NVIDIA GPU and $TILEGYM_PATH")
    if subprocess.run(["nvidia-smi"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no GPU")
    from cutile_workbench.services import probe as probe_service

    root = tmp_path / "out"
    shutil.copytree(SESSION / "matmul", root / "matmul")
    config = "True-True-False-False-2048-2048-2048-0-0-torch.float16"
    plan = probe_service.plan_probe(
        probe_service.ProbeRequest("matmul", config, out_root=root, tilegym=Path(tg))
    )
    assert not probe_service.cannot_run(plan)
    recorded = {"cutile-rs": 49.09, "cutile": 24.06}  # CUPTI per-launch medians of the recording, us
    for side in plan.sides:
        result, saved = probe_service.run_side(plan, side, timeout_s=300)
        assert saved.is_file() and result.kernel == side.spec.kernel_name
        assert result.registers_per_thread == 255 and result.grid == (132, 1, 1)
        assert result.duration_ns is not None
        assert 0.5 < result.duration_ns / 1e3 / recorded[side.spec.backend] < 2.0
