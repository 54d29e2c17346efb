"""The focused ncu probe core (f_evidence.ncu) and speed of light (f_evidence.sol, performance.md section).

- tests/fixtures/f/ncu_silu_and_mul_*.csv.log: REAL Nsight Compute output from the H200 (2026-12-01,
  fixture README), TileGym's logger lines and ncu's ==PROF== lines before the CSV as captured.
- Recorded REAL sessions: cutile_workbench/profiles/rms_norm/session (H200 medians, session.json naming the GPU).
- The end-to-end probe test needs a GPU and ncu (``-m gpu``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError, UnsafePath
from cutile_workbench.evidence.gpu import gpu_facts
from cutile_workbench.evidence.ncu import (
    METRICS,
    ProbeSpec,
    kernel_name_base,
    load_probes,
    parse_ncu_csv,
    probe_command,
    probe_for,
    probe_path,
    probe_specs,
    run_probe,
    save_probe,
    shell_line,
    side_by_side,
)
from cutile_workbench.evidence.sol import render_sol_section, shape_of, sol_for, sol_rows, work_model

FIX = Path(__file__).parent.parent / "fixtures" / "f"
PROFILES = Path(__file__).parent.parent.parent / "cutile_workbench" / "profiles"
H200 = gpu_facts({"versions": {"gpu": "NVIDIA H200"}})


def test_parse_the_real_h200_capture_into_a_typed_result() -> None:
    """REAL: ncu on one call of TileGym's cutile-rs and cuTile silu_and_mul, 64x1024x4096 fp16."""
    r = parse_ncu_csv(
        (FIX / "ncu_silu_and_mul_cutile_rs.csv.log").read_text(),
        backend="cutile-rs",
        params="64-1024-4096-torch.float16",
    )
    assert r.kernel == "silu_and_mul_kernel_entry" and r.duration_ns == 382_720 and r.device == "NVIDIA H200"
    assert (r.dram_read_bytes, r.dram_write_bytes) == (1_073_767_936, 522_987_520)
    assert r.dram_gb_per_s == pytest.approx((1_073_767_936 + 522_987_520) / 382_720e-9 / 1e9)  # derived
    assert (r.dram_pct_of_peak, r.sm_throughput_pct, r.tensor_pipe_pct) == (86.71, 35.76, 1.61)
    assert (r.achieved_occupancy_pct, r.theoretical_occupancy_pct, r.registers_per_thread) == (21.37, 25, 104)
    assert (r.spill_bytes, r.static_smem, r.dynamic_smem) == (
        0,
        0,
        0,
    )
    assert r.spill_requests is None  # that session read instruction counts, not l1tex requests
    assert (r.grid, r.block) == ((65536, 1, 1), (128, 1, 1))
    assert r.metrics["launch__occupancy_limit_registers"] == 4  # 104 regs x 128 threads: 4 blocks/SM
    ref = parse_ncu_csv((FIX / "ncu_silu_and_mul_cutile.csv.log").read_text())
    assert ref.kernel.startswith("_silu_and_mul_kernel_row_wise_Kt1_") and ref.duration_ns == 397_728
    assert ref.registers_per_thread == 126 and ref.spill_bytes == 0
    rows = {m: (c, b) for m, c, b in side_by_side(r, ref)}
    assert rows["duration"] == ("382.72 us", "397.73 us") and rows["DRAM % of peak"] == ("86.7 %", "83.5 %")
    compact = {m: (c, b) for m, c, b in side_by_side(r, ref, compact=True)}
    assert compact["time"] == ("382.72us", "397.73us") and compact["DRAM GB/s"] == ("4,172", "4,014")
    assert (
        max(len(m) + len(c) + len(b) for m, c, b in side_by_side(r, ref, compact=True)) <= 28
    )  # 36-col panel


def test_log_lines_between_the_records_are_skipped() -> None:
    """REAL capture with the profiled process's output moved between the header, units and data rows
    (as a merged stdout can interleave it)."""
    lines = (FIX / "ncu_silu_and_mul_cutile_rs.csv.log").read_text().splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith('"ID",'))
    noise = "[2026-12-01 09:22:55] [tilegym.backend.cutile_rs.autotuner] [INFO] [logger.py:195] best=..."
    mixed = [
        *lines[: head + 1],
        noise,
        "==PROF== Disconnected from process 1180",
        lines[head + 1],
        "",
        noise,
        lines[head + 2],
    ]
    assert parse_ncu_csv("\n".join(mixed)).duration_ns == 382_720


def test_scaled_units_are_converted_to_base_units() -> None:
    text = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum"\n'
        '"","","","","","","","","","","","usecond","Mbyte","Kbyte"\n'
        '"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","2.5","1.5","3"\n'
    )
    r = parse_ncu_csv(text)
    assert r.duration_ns == pytest.approx(2500) and r.dram_read_bytes == pytest.approx(1.5e6)
    assert r.dram_bytes_per_s == pytest.approx((1.5e6 + 3e3) / 2.5e-6)  # derived when not measured


def test_bad_csv_is_refused_with_file_and_line() -> None:
    with pytest.raises(InputError, match="profiled nothing"):
        parse_ncu_csv("==PROF== Connected\n==PROF== Disconnected\n", path="p.csv")
    with pytest.raises(InputError, match="ERROR"):
        parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n", path="p.csv")
    good = (FIX / "ncu_silu_and_mul_cutile_rs.csv.log").read_text().splitlines()
    head = next(i for i, ln in enumerate(good) if ln.startswith('"ID",'))
    broken = "\n".join(good[: head + 2]) + '\n"1","2"\n'
    with pytest.raises(InputError) as exc:
        parse_ncu_csv(broken, path="p.csv")
    assert exc.value.line == head + 3
    no_rows = "\n".join(good[head : head + 2])
    with pytest.raises(InputError, match="no kernel row"):
        parse_ncu_csv(no_rows)
    bad_number = "\n".join(good[: head + 2]) + "\n" + good[head + 2].replace('"382,720"', '"fast"')
    with pytest.raises(InputError) as exc2:
        parse_ncu_csv(bad_number, path="p.csv")
    assert exc2.value.key == "gpu__time_duration.sum" and exc2.value.line == head + 3


def test_probe_command_profiles_one_tuned_call() -> None:
    spec = ProbeSpec(
        "cutile-rs",
        "64-1024-4096-torch.float16",
        "tests/ops/test_silu_and_mul.py::Test_SiLUAndMul::test_perf[cutile_rs-64-1024-4096-torch.float16]",
        "silu_and_mul_kernel_entry",
        Path("/tg"),
        python="/venv/bin/python",
    )
    argv, env = probe_command(spec, Path("/tmp/x.csv"))
    assert argv[0] == "ncu" and env["WORKBENCH_PROFILE_RANGE"] == "1" and env["CUPTI"] == "1"
    assert env["PYTHONPATH"].split(":")[0] == str(Path(__file__).resolve().parents[2])  # our plugin first
    joined = " ".join(argv)
    for part in (
        "--profile-from-start off",
        "-k regex:^silu_and_mul_kernel_entry$",
        "-c 1",
        "--clock-control none",
        "--csv --page raw --print-units base",
        "--log-file /tmp/x.csv",
        "--kernel-name-base function",
        "--print-kernel-base function",
        "-m pytest -p no:cacheprovider --rootdir=/tg -p no:cutile_workbench -p cutile_workbench.run.plugins.perflog "
        "tests/ops/test_silu_and_mul.py::Test_SiLUAndMul::test_perf[cutile_rs-",
        "--workbench-harness",
    ):
        assert part in joined, part
    assert argv[argv.index("--metrics") + 1] == ",".join(METRICS)
    assert shell_line(spec, Path("/tmp/x.csv")).startswith(
        "cd /tg && WORKBENCH_PROFILE_RANGE=1 CUPTI=1 PYTHONPATH="
    )


def test_probe_specs_come_from_the_recorded_captures() -> None:
    """REAL: cutile_workbench/profiles/rms_norm/session/rms_norm (H200 CUPTI captures name both main kernels)."""
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.stages.f.inputs import collect_inputs

    ws = open_workspace("rms_norm", out_root=PROFILES / "rms_norm" / "session")
    inputs = collect_inputs(ws)
    assert inputs.table is not None
    row = max(inputs.table.matched, key=lambda r: r.ratio or 0)
    specs = probe_specs(
        row,
        launch_sets=inputs.launch_sets,
        candidate_backend=inputs.candidate_backend,
        candidate_record=None,
        baseline_record=None,
        cwd=PROFILES.parent,
    )
    assert [s.backend for s in specs] == ["cutile", "triton_tileir"]
    assert (
        specs[0].kernel_name.startswith("rms_norm_tile_kernel_Kt1_")
        and specs[1].kernel_name == "rms_norm_fwd_kernel"
    )
    assert (
        specs[0].nodeid == f"profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf[cutile-{row.params}]"
    )
    assert (
        specs[1].nodeid == f"profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf[triton-{row.params}]"
    )
    assert kernel_name_base("_ZN2at6native18elementwise_kernelEv") == "mangled"
    assert kernel_name_base("void at::native::fill<float>(float*)") == "demangled"


def test_probe_files_round_trip_and_recorded_sessions_are_refused(tmp_path: Path) -> None:
    paths = KernelPaths.under(tmp_path, "silu_and_mul")
    paths.root.mkdir()
    raw = (FIX / "ncu_silu_and_mul_cutile_rs.csv.log").read_text()
    r = parse_ncu_csv(raw, backend="cutile-rs", params="64-1024-4096-torch.float16")
    target = save_probe(paths, r, raw_csv=raw)
    assert target == probe_path(paths, "cutile-rs", "64-1024-4096-torch.float16")
    assert target.with_suffix(".csv").read_text() == raw
    assert not list(target.parent.glob(".*tmp*"))  # temp files renamed away
    loaded = load_probes(paths)
    assert probe_for(loaded, "cutile-rs", "64-1024-4096-torch.float16") == r
    with pytest.raises(UnsafePath, match="recorded session is read-only"):
        save_probe(paths, r, recorded=True)
    doc = json.loads(target.read_text())
    doc["probe"]["registers_per_thread"] = "forty"
    target.write_text(json.dumps(doc))
    with pytest.raises(InputError) as exc:
        load_probes(paths)
    assert exc.value.key == "probe.registers_per_thread"
    rows = dict((m, (c, b)) for m, c, b in side_by_side(r, None))
    assert rows["DRAM achieved"] == ("4,172.1 GB/s", "n/a") and rows["registers/thread"][0] == "104"


@pytest.mark.gpu
def test_probe_end_to_end_on_the_gpu(tmp_path: Path) -> None:
    """GPU + ncu: probe the recorded rms_norm profile's cuTile kernel at 4096x1024 for one call."""
    if shutil.which("ncu") is None or shutil.which("nvidia-smi") is None:
        pytest.skip("needs ncu and an NVIDIA GPU")
    if subprocess.run(["nvidia-smi"], capture_output=True, check=False).returncode != 0:
        pytest.skip("no GPU")
    import sys

    repo = Path(__file__).parent.parent.parent
    spec = ProbeSpec(
        "triton",
        "4096-1024-torch.bfloat16",
        "profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf[triton-4096-1024-torch.bfloat16]",
        "rms_norm_fwd_kernel",
        repo,
        python=sys.executable,
    )
    paths = KernelPaths.under(tmp_path, "rms_norm")
    paths.root.mkdir()
    result, raw = run_probe(spec, paths, timeout_s=300)
    assert result.kernel == "rms_norm_fwd_kernel" and result.duration_ns and result.duration_ns > 1000
    assert result.dram_read_bytes and result.dram_read_bytes >= 4096 * 1024 * 2
    save_probe(paths, result, raw_csv=raw)
    assert probe_for(load_probes(paths), "triton", "4096-1024-torch.bfloat16") == result


# --------------------------------------------------------------------------- speed of light


def test_work_models_per_family() -> None:
    silu = work_model(
        "silu_and_mul", {"batch_size": 64, "seq_len": 1024, "hidden_size": 4096, "dtype": "torch.float16"}
    )
    assert silu is not None and silu.bytes == 64 * 1024 * 3 * 4096 * 2 and silu.bound == "memory"
    mm = work_model("matmul", {"m": 2048, "n": 2048, "k": 2048, "dtype": "float16"})
    assert mm is not None and mm.flops == 2 * 2048**3 and mm.bytes == 3 * 2048 * 2048 * 2
    bmm = work_model(
        "bmm",
        shape_of(
            "2-2048-2048-2048-False-False-torch.float16",
            argnames=["q", "m", "n", "k", "transpose_a", "transpose_b", "dtype"],
        ),
    )
    assert bmm is not None and bmm.flops == 2 * 2 * 2048**3
    assert work_model("attention_sink", {"m": 1, "dtype": "float16"}) is None  # not well-defined here
    assert work_model("matmul", {"m": 2048, "n": 2048, "dtype": "float16"}) is None  # a dimension missing
    assert work_model("matmul", {"m": 1, "n": 1, "k": 1}) is None  # no dtype: refused, not guessed


def test_sol_against_measured_peaks_only() -> None:
    silu = work_model(
        "silu_and_mul", {"batch_size": 64, "seq_len": 1024, "hidden_size": 4096, "dtype": "float16"}
    )
    assert silu is not None
    s = sol_for(silu, 0.38963, H200)  # gpu.md §6: cutile-rs median 389.63 us
    assert s is not None and s.bw_fraction == pytest.approx(silu.bytes / 389.63e-6 / 4.3e12)
    mm = work_model("matmul", {"m": 4096, "n": 4096, "k": 4096, "dtype": "bfloat16"})
    assert mm is not None
    s2 = sol_for(mm, 0.25, H200)
    assert s2 is not None and s2.flop_fraction == pytest.approx(2 * 4096**3 / 0.25e-3 / 790e12)
    fp32 = work_model("matmul", {"m": 4096, "n": 4096, "k": 4096, "dtype": "float32"})
    assert fp32 is not None and (sol := sol_for(fp32, 1.0, H200)) is not None and sol.flop_fraction is None
    unknown = gpu_facts({"gpu": "NVIDIA A100-SXM4-80GB"})
    s3 = sol_for(silu, 0.5, unknown)
    assert s3 is not None and s3.sol is None and unknown.capability == (8, 0)


def test_gpu_capability_sources() -> None:
    assert gpu_facts({"runs": {"candidate": {"gpu": "NVIDIA H200, 580.159.04"}}}).capability == (9, 0)
    assert gpu_facts({"compute_capability": "10.0", "gpu": "x"}).capability == (10, 0)
    assert gpu_facts({"versions": {"compute_capability": [12, 0]}}).sm == "sm_120"
    assert "assumed" in gpu_facts(None).capability_source


def test_performance_md_gets_a_speed_of_light_section_without_a_second_validated_line(tmp_path: Path) -> None:
    """REAL: the recorded rms_norm session's E report, planned (never written)."""
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.stages.e.report import plan_e_report
    from cutile_workbench.stages.e.validators import validate_agent_e

    root = tmp_path / "out"
    shutil.copytree(PROFILES / "rms_norm" / "session" / "rms_norm", root / "rms_norm")
    ws = open_workspace("rms_norm", out_root=root)
    plan = plan_e_report(ws, run_real_scripts=False)
    md = next(f.content for f in plan.files if f.relpath == "reports/performance.md")
    assert md.count("\ngeomean_ratio=") == 1 and md.startswith("VERDICT: ")
    section = md.split("### Speed of light (achieved vs measured peak)\n", 1)[1]
    assert (
        "| 32768-4096-torch.bfloat16 | rms_norm (memory) | 3,141 GB/s | 73% | 4,062 GB/s | 94% | model |"
        in section
    )
    assert (
        plan.ok
        and validate_agent_e(root / "rms_norm", {f.relpath: f.content for f in plan.files}).exit_code == 0
    )
    rows = sol_rows(plan_table(ws), "rms_norm", gpu_facts(ws.session_meta()), analysis=ws.analysis)
    text = render_sol_section(rows, H200)
    assert not any(ln.startswith(("geomean_ratio=", "VERDICT:")) for ln in text.splitlines())


def plan_table(ws):  # type: ignore[no-untyped-def]
    from cutile_workbench.stages.e.report import load_candidate
    from cutile_workbench.stages.e.stats import build_ratio_table

    cand, _p, _n = load_candidate(ws)
    bases = {k: v for k, v in ws.baseline_logs().items() if not k.startswith("cutile_rs")}
    return build_ratio_table(ws.kernel, cand, bases, ws.analysis)


def test_shapes_from_the_tilegym_test_files_parametrize_names() -> None:
    """REAL excerpt of TileGym 75a1430 tests/ops/test_silu_and_mul.py (its test_perf parametrize stack)."""
    from cutile_workbench.checks.testfile import load_test_module
    from cutile_workbench.evidence.sol import test_argnames

    tg = FIX / "tilegym_75a1430"
    key = "tests/ops/test_silu_and_mul.py::Test_SiLUAndMul::test_perf"
    names = test_argnames(tg, [key, "tests/ops/test_missing.py::T::test_perf"])
    assert names == {key: ("batch_size", "seq_len", "hidden_size", "dtype")}
    ids = load_test_module(tg / "tests/ops/test_silu_and_mul.py", tg).derive_nodeids(
        load_test_module(tg / "tests/ops/test_silu_and_mul.py", tg).find("Test_SiLUAndMul::test_perf")
    )
    params = ids[0].split("[cutile-", 1)[1].rstrip("]")
    assert params == "64-1024-512-torch.float16"  # the id the argnames are zipped with
    model = work_model("silu_and_mul", shape_of("64-1024-4096-torch.float16", argnames=names[key]))
    assert model is not None and model.bytes == 64 * 1024 * 3 * 4096 * 2
