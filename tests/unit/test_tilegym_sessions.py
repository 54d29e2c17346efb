"""The recorded REAL cutile-rs sessions (cutile_workbench/profiles/tilegym/session, H200 2026-12-01; README there).

Everything checked here is a property of the real recording: E's table on it, the harness and
self-check marks in every record, the IR filed per config (and how it was chosen), the per-variant
IR pair seen through the canonicalizer (two printers: tileirdisasm vs cutile-rs's Rust printer),
and Agent A's analysis.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutile_workbench.artifacts.analysis import load_analysis
from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.ir.audit import audit_files, render_diff_ir_text
from cutile_workbench.ir.filing import entry_symbol, read_index
from cutile_workbench.ir.loader import discover_ir, load_pair
from cutile_workbench.profiles import get_recorded_tilegym, list_recorded_tilegym
from cutile_workbench.stages.e.stats import build_ratio_table

ROOT = Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / "tilegym" / "session"


def _logs(kernel: str):
    paths = KernelPaths.under(ROOT, kernel)
    cand = parse_perf_log(paths.agent_logs_dir / "perf_cutile_rs.full.txt", strict=True)
    base = parse_perf_log(paths.baseline_cutile, strict=True)
    return paths, cand, base


def test_both_sessions_are_registered_as_real_cutile_rs() -> None:
    assert {r.kernel for r in list_recorded_tilegym()} == {"silu_and_mul", "matmul"}
    for r in list_recorded_tilegym():
        assert not r.stand_in and r.kernel_dir.is_dir()
    assert get_recorded_tilegym("rms_norm") is None


@pytest.mark.parametrize(
    ("kernel", "geomean", "severity"), [("silu_and_mul", 0.9874, "DONE"), ("matmul", 1.3758, "MODERATE_GAP")]
)
def test_e_table_on_the_real_recording(kernel: str, geomean: float, severity: str) -> None:
    paths, cand, base = _logs(kernel)
    analysis = load_analysis(paths.analysis_json)
    t = build_ratio_table(kernel, cand, {"cutile": base}, analysis)
    assert round(t.geomean or 0, 4) == geomean and t.severity == severity
    assert all(r.status == "OK" and r.candidate_launches == 1 == r.baseline_launches for r in t.rows)
    assert {r.candidate_harness for r in t.rows} == {"workbench"} == {r.baseline_harness for r in t.rows}
    assert all(r.ci_low is not None for r in t.rows), "raw samples on both sides give every row a CI"
    if kernel == "matmul":
        assert round(t.variant_geomeans["non_persistent"], 4) == 0.9991
        assert round(t.variant_geomeans["static_persistent"], 4) == 1.8945


@pytest.mark.parametrize("kernel", ["silu_and_mul", "matmul"])
def test_every_record_passed_the_self_check_with_a_wall_speed_clock(kernel: str) -> None:
    _paths, cand, base = _logs(kernel)
    for rec in cand.records + base.records:
        fwd = rec.forward
        assert fwd is not None and fwd.harness == "workbench" and fwd.capture_verdict == "ok"
        clock = rec.raw["forward"]["capture"]["clock"]
        assert clock["ok"] and abs(clock["rate"] - 1) < 0.005
    assert {r.forward.kernel_name for r in cand.records if r.forward} <= {
        "silu_and_mul_kernel_entry",
        "non_persistent_matmul_kernel_entry",
        "static_persistent_matmul_kernel_entry",
    }


@pytest.mark.parametrize("kernel", ["silu_and_mul", "matmul"])
def test_ir_filed_per_config_is_what_ran(kernel: str) -> None:
    paths, cand, base = _logs(kernel)
    index = read_index(paths.root)["configs"]
    assert set(index) == {r.params for r in cand.records} == {r.params for r in base.records}
    ran = {r.params: r.forward.kernel_name for r in base.records if r.forward}
    for params, sides in index.items():
        ref_text = (paths.root / sides["reference"]["file"]).read_text()
        gen_text = (paths.root / sides["candidate"]["file"]).read_text()
        assert entry_symbol(ref_text) == ran[params], "reference = the compile CUPTI saw run"
        assert (entry_symbol(gen_text) or "").endswith("_entry") and "cuda_tile.module" in gen_text
    if kernel == "matmul":
        sp = index["True-True-False-False-2048-2048-2048-0-0-torch.float16"]["candidate"]
        assert "BM=128, BN=512, BK=64, NUM_CTAS=4" in sp["how"] and sp["autotune_config"].startswith(
            "namespace(BM=128"
        )
        reused = index["True-False-False-False-4096-4096-4096-0-0-torch.float16"]["candidate"]["how"]
        assert reused.startswith("compiled in an earlier test") and "JIT cache hit" in reused


def test_real_pair_lines_up_across_the_two_printers() -> None:
    """cuTile (tileirdisasm, %argN, optimization_hints=<sm_90 …>) vs cutile-rs (Rust printer, %N,
    #cuda_tile.optimization_hints<…>): after canonicalization the entry lines are spelled alike."""
    inv = discover_ir(KernelPaths.under(ROOT, "matmul"))
    pair = load_pair(inv.pair("static_persistent"))  # type: ignore[arg-type]
    ref0, gen0 = pair.reference.canon.lines[0], pair.generated.canon.lines[0]
    for line in (ref0, gen0):
        assert (
            line.startswith("entry @ENTRY(%v0: tile<ptr<f16>>") and "optimization_hints = <sm_* = {" in line
        )
    assert "num_cta_in_cga = 1" in ref0 and "num_cta_in_cga = 4" in gen0  # the real difference survives
    silu = load_pair(discover_ir(KernelPaths.under(ROOT, "silu_and_mul")).pair(None))  # type: ignore[arg-type]
    assert "optimization_hints" not in silu.reference.canon.lines[0]  # empty <default = {}> hint == none
    assert "optimization_hints" not in silu.generated.canon.lines[0]


def test_diff_ir_audit_on_the_real_static_persistent_pair() -> None:
    inv = discover_ir(KernelPaths.under(ROOT, "matmul"))
    pair = inv.pair("static_persistent")
    assert pair is not None
    text = render_diff_ir_text(audit_files(pair.reference, pair.generated))
    assert "num_cta hint mismatch ref=1 gen=4" in text
    assert "MMA accumulator ref=tile<128x128xf32>" in text and "gen=tile<128x512xf32>" in text


@pytest.mark.parametrize("kernel", ["silu_and_mul", "matmul"])
def test_analysis_json_as_agent_a_writes_it(kernel: str) -> None:
    doc = json.loads((ROOT / kernel / "reference" / "analysis.json").read_text())
    for key in (
        "kernel_name",
        "source",
        "launch_path",
        "pattern",
        "ops_used",
        "test_perf_configs",
        "correctness_reference",
        "correctness_tolerance",
    ):
        assert doc[key], key
    assert doc["reference_backend"] == "cutile" and doc["reference_backend_selection"]["winner"] == "cutile"
    for v in doc.get("kernel_variants", []):
        assert (ROOT / kernel / v["reference_ir"]).is_file()
    if kernel == "matmul":
        assert doc["best_config"]["static_persistent"] == {
            "TILE_SIZE_M": 128,
            "TILE_SIZE_N": 128,
            "TILE_SIZE_K": 64,
        }
        assert len(doc["config_to_variant"]) == 6


def _report_f(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "matmul", tmp_path / "matmul")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cutile_workbench",
            "report",
            "f",
            "matmul",
            "--out-root",
            str(tmp_path),
            "--yes",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    return proc.returncode, tmp_path / "matmul" / "reports"


def test_f_on_the_real_matmul_gap_cites_the_ir_that_config_ran(tmp_path: Path) -> None:
    rc, reports = _report_f(tmp_path)
    assert rc == 0
    name = "perf_investigation_True-True-False-False-2048-2048-2048-0-0-torch.float16.md"
    text = (reports / name).read_text()
    assert text.startswith("VERDICT: FIXABLE\n")
    assert "per-launch ratio 2.040x" in text
    assert (
        "`diff_ir.sh workbench/ir/reference/True-True-False-False-2048-2048-2048-0-0-torch.float16.mlir "
        "workbench/ir/candidate/True-True-False-False-2048-2048-2048-0-0-torch.float16.mlir`"
    ) in text
    assert "num_cta hint mismatch ref=1 gen=4" in text
    assert (
        "wrapper source unavailable" in text
        or "wrapper source not available" in (reports / "agent_f.md").read_text()
    )


TILEGYM = Path(__file__).resolve().parents[2] / ".fetched" / "TileGym"


@pytest.mark.skipif(not (TILEGYM / "src" / "tilegym").is_dir(), reason="TileGym snapshot absent")
def test_f_with_the_wrapper_names_the_reference_config_cutile_rs_lacks(tmp_path: Path) -> None:
    rc, reports = _report_f(tmp_path, "--tilegym", str(TILEGYM))
    assert rc == 0
    text = (
        reports / "perf_investigation_True-True-False-False-2048-2048-2048-0-0-torch.float16.md"
    ).read_text()
    assert "SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1)" in text
    assert "_static_persistent_configs() (4 config(s))" in text


def test_table_names_a_real_candidate_and_labels_stand_ins() -> None:
    """`table` says who the candidate is: real cutile-rs here, STAND-IN for the profile sessions."""
    import subprocess
    import sys

    def first_lines(kernel: str) -> list[str]:
        out = subprocess.run(
            [sys.executable, "-m", "cutile_workbench", "table", kernel],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).resolve().parents[2],
        ).stdout
        return out.splitlines()[1:3]

    assert first_lines("matmul")[0] == "candidate: cutile-rs"
    assert first_lines("matmul")[1].startswith("measured by: candidate: workbench CUPTI harness")
    assert first_lines("rms_norm")[0] == "candidate: STAND-IN cutile (not cutile-rs)"
    assert first_lines("rms_norm_hotpath")[0] == "candidate: STAND-IN cutile-hotpath (not cutile-rs)"


def test_the_real_ncu_probe_of_the_matmul_gap_is_filed_and_cited(tmp_path: Path) -> None:
    """The probe recorded on the H200 (call 5) loads, and F's report on the session quotes it."""
    from cutile_workbench.evidence.ncu import load_probes

    probes = load_probes(KernelPaths.under(ROOT, "matmul"))
    key = "True-True-False-False-2048-2048-2048-0-0-torch.float16"
    cand = next(v for (b, p), v in probes.items() if p == key and b.startswith("cutile_rs"))
    base = next(v for (b, p), v in probes.items() if p == key and b == "cutile")
    assert cand.registers_per_thread == 255 == base.registers_per_thread
    assert round(cand.duration_ns / 1000, 2) == 47.94 and round(base.duration_ns / 1000, 2) == 25.41
    rc, reports = _report_f(tmp_path)
    assert rc == 0
    text = (reports / f"perf_investigation_{key}.md").read_text()
    assert "## ncu probe" in text and "| DRAM achieved | 358.7 GB/s | 663.7 GB/s |" in text
