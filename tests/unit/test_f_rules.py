"""F's verdict rules V1–V5 (cutile_workbench.stages.f.diagnosis docstring), one test each, on real data where it exists.

- REAL: tests/fixtures/tilegym_h200 (TileGym's own rms_norm test_perf on the H200: cuTile vs Triton,
  with and without per-launch captures), cutile_workbench/profiles/rms_norm/session (recorded H200 sessions), the
  TileGym 75a1430 wrapper excerpts in tests/fixtures/f/tilegym_75a1430.
- SYNTHETIC (labelled per test): kernel trees built with tests/fixtures/e/builders.py (logs rendered by
  the real printer) and FInputs built in memory.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.evidence.search_space import SearchSpaceAudit
from cutile_workbench.ir.audit import audit_texts
from cutile_workbench.model import CallCapture, Launch, LaunchSet, RatioRow, RatioTable
from cutile_workbench.stages.f.diagnosis import diagnose
from cutile_workbench.stages.f.finputs import FInputs
from cutile_workbench.stages.f.inputs import collect_inputs
from cutile_workbench.stages.f.render import render_investigation

HERE = Path(__file__).parent.parent
_spec = importlib.util.spec_from_file_location("e_builders", HERE / "fixtures/e/builders.py")
assert _spec is not None and _spec.loader is not None
B = importlib.util.module_from_spec(_spec)
sys.modules["e_builders"] = B
_spec.loader.exec_module(B)

H200 = HERE / "fixtures" / "tilegym_h200"
TG = HERE / "fixtures" / "f" / "tilegym_75a1430"
IR = HERE / "fixtures" / "ir"
SLOW = "static_persistent-262144-1024-torch.float16"  # Triton 1.26x slower than cuTile there (REAL)


def _tilegym_pair(tmp_path: Path, run: str, *, candidate: str = "triton") -> Path:
    """REAL: TileGym's H200 logs laid out as an F kernel dir; ``candidate`` plays the cutile-rs role."""
    k = tmp_path / "out" / "rms_norm"
    k.mkdir(parents=True)
    src = H200 / run
    other = "cutile" if candidate == "triton" else "triton_tileir"
    cand_log = "baseline_perf_triton_tileir.txt" if candidate == "triton" else "baseline_perf_cutile.txt"
    shutil.copyfile(src / cand_log, k / "perf_cutile_rs.txt")
    shutil.copyfile(src / f"baseline_perf_{other}.txt", k / f"baseline_perf_{other}.txt")
    if (src / "launches.json.gz").is_file():
        (k / "workbench").mkdir()
        shutil.copyfile(src / "launches.json.gz", k / "workbench" / "launches.json.gz")
    return k.parent


def _diagnose(root: Path, kernel: str = "rms_norm", tilegym: Path | None = None):  # type: ignore[no-untyped-def]
    ws = open_workspace(kernel, out_root=root, tilegym=tilegym)
    inputs = collect_inputs(ws)
    return inputs, diagnose(inputs)


# --------------------------------------------------------------------------- V1, V2


def test_v1_no_matched_config_is_blocked_low(tmp_path: Path) -> None:
    """SYNTHETIC tree: every candidate test FAILED (the real sm_90 tileiras failure text)."""
    B.kernel_dir(tmp_path, "k", candidate={}, baseline={"a-1": 0.01}, failed=("a-1",))
    _inputs, invs = _diagnose(tmp_path, "k")
    (inv,) = invs
    assert (inv.verdict, inv.details["rule"], inv.details["confidence"]) == ("BLOCKED", "V1", "low")


def test_v2_nothing_slower_than_the_gate_is_aligned_high(tmp_path: Path) -> None:
    """REAL: cuTile as candidate vs Triton: every config ≤ 1.05x (TileGym's own H200 run)."""
    _inputs, invs = _diagnose(_tilegym_pair(tmp_path, "harness", candidate="cutile"))
    (inv,) = invs
    assert (inv.verdict, inv.details["rule"], inv.details["confidence"]) == ("ALIGNED", "V2", "high")


# --------------------------------------------------------------------------- V5: the bug of issue 12


def test_v5_real_gap_with_one_launch_each_and_no_actionable_evidence_is_not_aligned(tmp_path: Path) -> None:
    """REAL: Triton vs cuTile at 262144x1024: a tight 1.26x per-launch gap, 1/1 launches. Without IR,
    wrapper or probe this used to read ALIGNED; it must be BLOCKED, listing what is missing."""
    for run in ("plain", "harness"):
        inputs, invs = _diagnose(_tilegym_pair(tmp_path / run, run))
        (inv,) = invs
        assert inv.scope == SLOW and inv.verdict == "BLOCKED" and inv.details["rule"] == "V5", run
        assert inv.details["confidence"] == "low"
        gap = inv.details["gap"]
        assert gap.status == "real" and gap.ci is not None and gap.ci[0] > 1.2
        reasons = " ".join(f.summary for f in inv.findings if f.kind == "missing")
        assert "a real per-launch gap" in reasons and "no ncu probe" in reasons
        assert "IR pair" in reasons and "wrapper source not available" in reasons
        rep = render_investigation(inv, inputs)
        assert rep.startswith("VERDICT: BLOCKED\n") and "ALIGNED" not in rep
        assert rep.split("## Confidence\n", 1)[1].startswith("Low.")
        launch = rep.split("## Launch-count evidence\n", 1)[1].split("## Root Cause", 1)[0]
        if run == "plain":  # one source per report: kernel_times, named as such, never "no launch evidence"
            assert "Source: the perf logs' kernel_times" in launch and "No launch evidence" not in launch
            assert "CUPTI" not in launch
        else:
            assert "Source: per-launch CUPTI capture" in launch and "kernel_times" not in launch


def test_v5_unresolved_gap_is_blocked() -> None:
    """SYNTHETIC captures: a 1.3x median gap whose samples are too noisy to call."""
    p = "p"
    noisy = [40.0 if i % 2 else 90.0 for i in range(20)]
    rows = [RatioRow("f", p, None, "triton", 0.05, 0.065, 1.3, "OK")]
    sets = [_set("triton", p, [50.0] * 19 + [30.0]), _set("cutile", p, noisy)]
    (inv,) = diagnose(FInputs("k", _table(rows), sets, candidate_backend="cutile"))
    assert inv.verdict == "BLOCKED" and inv.details["gap"].status == "unresolved"
    assert any("unresolved" in f.summary for f in inv.findings if f.kind == "missing")


# --------------------------------------------------------------------------- V3


def _matmul_tree(tmp_path: Path, ratio: float, *, dispatch_bug: bool = False) -> tuple[Path, Path]:
    """SYNTHETIC kernel tree (real printer) + REAL TileGym 75a1430 wrappers in a TileGym tree."""
    tg = tmp_path / "tilegym"
    for side in ("cutile_rs", "cutile"):
        d = tg / "src" / "tilegym" / "ops" / side
        d.mkdir(parents=True)
        shutil.copyfile(TG / side / "matmul.py", d / "matmul.py")
    func = "tests/ops/test_matmul.py::Test_Matmul::test_perf"
    sp, np_ = (
        "True-True-False-False-4096-4096-4096-0-0-torch.float16",
        "True-False-False-False-4096-4096-4096-0-0-torch.float16",
    )
    base_k = {sp: "_static_persistent_matmul_kernel_Kt1_A2f16_I256", np_: "_matmul_kernel_Kt1_A2f16_I128"}
    cand_k = {
        sp: "static_persistent_matmul_kernel_entry",
        np_: "static_persistent_matmul_kernel_entry"
        if dispatch_bug
        else "non_persistent_matmul_kernel_entry",
    }

    def st(ms: float, kernel: str) -> dict:
        s = B.stats(ms, samples=[ms * (1 + 0.0005 * (i % 9)) for i in range(60)])
        s["kernel_name"] = kernel
        s["kernel_times"] = [
            {"name": kernel, "self_time_us": ms * 1000, "total_time_us": ms * 1000, "count": 1}
        ]
        return s

    k = tmp_path / "out" / "matmul"
    (k / "reports" / "agent_logs").mkdir(parents=True)
    (k / "reports/agent_logs/perf_cutile_rs.full.txt").write_text(
        B.perf_log("cutile-rs", [(p, st(0.25 * ratio, cand_k[p])) for p in (sp, np_)], func=func)
    )
    (k / "baseline_perf_cutile.txt").write_text(
        B.perf_log("cutile", [(p, st(0.25, base_k[p])) for p in (sp, np_)], func=func)
    )
    (k / "reference").mkdir()
    import json

    (k / "reference" / "analysis.json").write_text(
        json.dumps(
            {
                "kernel_name": "matmul",
                "launch_path": "autotune",
                "reference_backend": "cutile",
                "kernel_variants": [
                    {
                        "variant_name": "static_persistent",
                        "kernel_function": "_static_persistent_matmul_kernel",
                        "reference_ir": "reference/reference_static_persistent.mlir",
                    },
                    {
                        "variant_name": "non_persistent",
                        "kernel_function": "_matmul_kernel",
                        "reference_ir": "reference/reference_non_persistent.mlir",
                    },
                ],
                "config_to_variant": {sp: "static_persistent", np_: "non_persistent"},
            }
        )
    )
    (k / "workbench").mkdir()
    (k / "workbench" / "session.json").write_text(json.dumps({"versions": {"gpu": "NVIDIA H200"}}))
    return k.parent, tg


def test_v3_missing_reference_config_with_a_real_gap_is_fixable(tmp_path: Path) -> None:
    root, tg = _matmul_tree(tmp_path, 1.3)
    inputs, invs = _diagnose(root, "matmul", tilegym=tg)
    assert [i.verdict for i in invs] == ["FIXABLE"]
    inv = invs[0]
    space = [f for f in inv.findings if f.fixable and f.details.get("rule") == "search_space"]
    assert len(space) == 1 and space[0].details["variant"] == "static_persistent"
    rep = render_investigation(inv, inputs)
    assert "Agent B/D (autotune search space" in rep and "tile_m=128 tile_n=128" in rep
    # the action names the config in the wrapper's own spelling, at the wrapper's config function
    assert (
        "_static_persistent_configs()" in rep
        and "`SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1)`" in rep
    )
    assert "sm_90" in rep and "## Config parity" in rep


def test_v3_gap_gated_findings_do_not_decide_within_noise(tmp_path: Path) -> None:
    root, tg = _matmul_tree(tmp_path, 1.04)
    _inputs, invs = _diagnose(root, "matmul", tilegym=tg)
    assert [i.verdict for i in invs] == ["ALIGNED"]  # V2: nothing above the gate
    root2, tg2 = _matmul_tree(tmp_path / "b", 1.3)
    inputs = collect_inputs(open_workspace("matmul", out_root=root2, tilegym=tg2))
    rows = [
        RatioRow(
            r.func_key,
            r.params,
            r.variant,
            r.baseline_backend,
            r.baseline_ms,
            r.baseline_ms * 1.3,
            1.3,
            "OK",
            ci_low=1.0,
            ci_high=1.6,
        )
        for r in inputs.table.matched
    ]  # type: ignore[union-attr]
    inputs.table = _table(rows)
    inputs.candidate_records = {}  # per-call medians only, with a wide interval
    (inv,) = diagnose(inputs)
    gated = [
        f
        for f in inv.findings
        if f.details.get("rule") == "search_space" and "1 of the reference" in f.summary
    ]
    assert gated and not gated[0].fixable and "not decisive" in gated[0].summary
    assert inv.verdict == "BLOCKED"


def test_v3_one_candidate_kernel_for_both_variants_is_a_wrong_dispatch(tmp_path: Path) -> None:
    root, tg = _matmul_tree(tmp_path, 1.3, dispatch_bug=True)
    inputs, invs = _diagnose(root, "matmul", tilegym=tg)
    inv = invs[0]
    d = [f for f in inv.findings if f.kind == "dispatch"]
    assert inv.verdict == "FIXABLE" and d and d[0].fixable and d[0].confidence == "high"
    assert d[0].details["rule"] == "one_kernel_for_variants"
    rep = render_investigation(inv, inputs)
    assert "## Kernel identity" in rep and "Agent D (ffi.rs / wrapper variant dispatch)" in rep


def test_v3_extra_launches_from_kernel_times_only(tmp_path: Path) -> None:
    """REAL logs of the recorded hot-path session without its captures: 3 vs 1 launches/iter."""
    k = tmp_path / "rms_norm_hotpath"
    shutil.copytree(
        HERE.parent / "cutile_workbench" / "profiles" / "rms_norm" / "session" / "rms_norm_hotpath", k
    )
    shutil.rmtree(k / "workbench")
    inputs, invs = _diagnose(tmp_path, "rms_norm_hotpath")
    (inv,) = invs
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert inv.verdict == "FIXABLE" and lc.fixable and lc.confidence == "medium"
    assert "kinds unknown without per-launch captures" in lc.summary
    assert "kernel_times" in render_investigation(inv, inputs).split("## Root Cause", 1)[0]


# --------------------------------------------------------------------------- V4


def _set(backend: str, params: str, per_launch_us: list[float], **res: object) -> LaunchSet:
    calls, t = [], 0
    for i, us in enumerate(per_launch_us):
        d = int(us * 1000)
        calls.append(
            CallCapture(
                i, backend, t, t + d + 500, (Launch("kernel", f"{backend}_kernel", t, t + d, i, **res),)
            )
        )  # type: ignore[arg-type]
        t += d + 10_000
    return LaunchSet(f"f[{backend}-{params}]", backend, params, calls)


def _table(rows: list[RatioRow]) -> RatioTable:
    return RatioTable("k", rows, rows[0].ratio, None, "INVESTIGATE")


def test_v4_aligned_within_noise_on_captures_is_high() -> None:
    """SYNTHETIC: E says 1.08x, the per-launch captures agree within 2 %."""
    rows = [RatioRow("f", "p", None, "triton", 0.050, 0.054, 1.08, "OK")]
    base = [50.0 + (i % 5) * 0.1 for i in range(40)]
    sets = [_set("triton", "p", base), _set("cutile", "p", [x * 1.02 for x in base])]
    (inv,) = diagnose(FInputs("k", _table(rows), sets, candidate_backend="cutile"))
    assert (inv.verdict, inv.details["rule"], inv.details["confidence"]) == ("ALIGNED", "V4", "high")


def test_v4_named_backend_limitation_needs_the_whole_evidence_chain() -> None:
    """SYNTHETIC: a real 1.3x gap with the same IR, the same resources and no autotuning anywhere."""
    text = (IR / "synthetic_softmax_cpp.mlir").read_text()
    rows = [RatioRow("f", "p", None, "triton", 0.050, 0.065, 1.3, "OK")]
    res = {
        "grid": (132, 1, 1),
        "block": (256, 1, 1),
        "registers_per_thread": 64,
        "static_smem": 0,
        "dynamic_smem": 0,
    }
    base = [50.0 + (i % 5) * 0.1 for i in range(40)]
    sets = [_set("triton", "p", base, **res), _set("cutile", "p", [x * 1.3 for x in base], **res)]
    no_tuning = SearchSpaceAudit((9, 0), "test")
    inp = FInputs(
        "k",
        _table(rows),
        sets,
        ir_audits={None: audit_texts(text, text)},
        candidate_backend="cutile",
        search_space=no_tuning,
        wrapper_read=True,
    )
    (inv,) = diagnose(inp)
    assert (inv.verdict, inv.details["rule"], inv.details["confidence"]) == ("ALIGNED", "V4", "medium")
    assert any(f.kind == "limitation" and "tileiras" in f.summary for f in inv.findings)
    # one link missing (the wrapper was not read) → not ALIGNED
    inp.wrapper_read = False
    (inv2,) = diagnose(inp)
    assert inv2.verdict == "BLOCKED"
    assert any("search space not shown to cover" in f.summary for f in inv2.findings if f.kind == "missing")


def test_confidence_follows_the_evidence_and_blocked_is_never_high(tmp_path: Path) -> None:
    verdicts = []
    for run in ("plain", "harness"):
        _i, invs = _diagnose(_tilegym_pair(tmp_path / run, run))
        verdicts += [(i.verdict, i.details["confidence"]) for i in invs]
    root, tg = _matmul_tree(tmp_path / "m", 1.3)
    _i, invs = _diagnose(root, "matmul", tilegym=tg)
    verdicts += [(i.verdict, i.details["confidence"]) for i in invs]
    assert all(c != "high" for v, c in verdicts if v == "BLOCKED")
    assert ("FIXABLE", "medium") in verdicts  # the search-space finding, gated on a bootstrap-CI gap


def test_v3_probe_spills_with_a_real_gap_are_fixable_without_captures(tmp_path: Path) -> None:
    """REAL logs (TileGym's H200 run, kernel_times only) + probes filed for the slow config: the
    reference side is the REAL H200 ncu capture of tests/fixtures/f (no spills, 21.4 % achieved
    occupancy); the candidate side is a SYNTHETIC variant of it (4 MiB of local-memory traffic, half
    the achieved occupancy) — the edge case the resource rule exists for."""
    from dataclasses import replace

    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.evidence.ncu import parse_ncu_csv, save_probe

    root = _tilegym_pair(tmp_path, "plain")
    paths = KernelPaths.under(root, "rms_norm")
    clean = parse_ncu_csv((HERE / "fixtures" / "f" / "ncu_silu_and_mul_cutile.csv.log").read_text())
    spilling = replace(
        clean,
        local_load_bytes=2_097_152.0,
        local_store_bytes=2_097_152.0,
        local_load_requests=65_536.0,
        local_store_requests=65_536.0,
        achieved_occupancy_pct=10.7,
    )
    save_probe(paths, replace(spilling, backend="triton", params=SLOW, csv="workbench/probes/triton.csv"))
    save_probe(paths, replace(clean, backend="cutile", params=SLOW, csv="workbench/probes/cutile.csv"))
    inputs, invs = _diagnose(root)
    (inv,) = invs
    res = next(f for f in inv.findings if f.kind == "resources")
    assert inv.verdict == "FIXABLE" and res.fixable and inv.details["rule"] == "V3"
    assert (
        "spills 4,194,304 B to local memory" in res.summary
        and "achieved occupancy 10.7% vs 21.9%" in res.summary
    )
    assert "workbench/probes/triton.csv" in res.evidence
    rep = render_investigation(inv, inputs)
    assert f"## ncu probe (`{SLOW}`)" in rep and "| local-memory (spill) bytes | 4,194,304 B | 0 B |" in rep


def test_v2_does_not_hide_extra_launches_within_the_gate(tmp_path: Path) -> None:
    """SYNTHETIC tree: the candidate is as fast overall but launches twice per call (kernel_times)."""
    k = tmp_path / "k"
    (k / "reports" / "agent_logs").mkdir(parents=True)
    (k / "reports/agent_logs/perf_cutile_rs.full.txt").write_text(
        B.perf_log("cutile-rs", [("a-1", B.stats(0.0100, count=2)), ("b-2", B.stats(0.0200))])
    )
    (k / "baseline_perf_cutile.txt").write_text(
        B.perf_log("cutile", [("a-1", B.stats(0.0101)), ("b-2", B.stats(0.0200))])
    )
    _inputs, invs = _diagnose(tmp_path, "k")
    assert [(i.scope, i.verdict) for i in invs] == [("a-1", "FIXABLE")]
    assert any(f.kind == "launch_count" and f.fixable for f in invs[0].findings)
