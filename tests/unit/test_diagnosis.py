"""The F procedure (cutile_workbench.stages.f.diagnosis) on recorded-fact fixtures and synthetic edge cases.

- tests/fixtures/f/*.launches.json: synthetic from the real H200 facts of docs/gpu.md §4 (README).
- Launch sets built with ``_set`` below are synthetic (labelled per test).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile_workbench.artifacts.analysis import parse_analysis
from cutile_workbench.artifacts.launches_io import load_launch_sets
from cutile_workbench.evidence.launches import classify_kernel, summarize_launch_set
from cutile_workbench.ir.audit import audit_files
from cutile_workbench.model import CallCapture, Launch, LaunchSet, RatioRow, RatioTable
from cutile_workbench.stages.f.diagnosis import classify_pattern, config_findings, diagnose
from cutile_workbench.stages.f.finputs import FInputs

FIX = Path(__file__).parent.parent / "fixtures"
P = "static_persistent-16384-2048-torch.bfloat16"
FUNC = "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf"


def _row(params: str, base_ms: float, cand_ms: float, backend: str = "triton", **kw: object) -> RatioRow:
    return RatioRow(FUNC, params, None, backend, base_ms, cand_ms, cand_ms / base_ms, "OK", **kw)  # type: ignore[arg-type]


def _table(rows: list[RatioRow]) -> RatioTable:
    import math

    ratios = [r.ratio for r in rows if r.ratio is not None]
    g = math.exp(sum(math.log(x) for x in ratios) / len(ratios)) if ratios else None
    return RatioTable("rms_norm", rows, g, None, "INVESTIGATE")


def _set(
    backend: str, params: str, kernels: list[tuple[str, str, float]], n: int = 5, **res: object
) -> LaunchSet:
    """Synthetic launch set: each call launches ``kernels`` (kind, name, us) in order."""
    calls = []
    t = 0
    for i in range(n):
        launches = []
        for k, (kind, name, us) in enumerate(kernels):
            d = int(us * 1000)
            launches.append(
                Launch(kind, name, t, t + d, 1000 * i + k, **(res if k == len(kernels) - 1 else {}))
            )  # type: ignore[arg-type]
            t += d + 1000
        calls.append(CallCapture(i, backend, t - 10_000, t, tuple(launches)))
        t += 10_000
    return LaunchSet(f"x::test_perf[{backend}-{params}]", backend, params, calls)


def test_hotpath_wrapper_is_fixable_with_extra_kernels_named() -> None:
    sets = load_launch_sets(FIX / "f" / "hotpath_16384x2048.launches.json")
    rows = [_row(P, 0.08278, 0.1509, backend="cutile")]
    invs = diagnose(FInputs("rms_norm", _table(rows), sets, candidate_backend="cutile-hotpath"))
    assert len(invs) == 1
    inv = invs[0]
    assert (inv.scope, inv.verdict, inv.pattern) == ("all_shapes", "FIXABLE", "uniform")
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert lc.fixable and lc.confidence == "high" and lc.details["same_per_launch"]
    extra = " ".join(lc.details["extra"])
    assert "fill x1" in extra and "FillFunctor" in extra
    assert "elementwise add x1" in extra
    assert "3 GPU activities per call vs 1" in lc.summary
    base, cand = inv.details["launch_summaries"]
    assert (base.launches_per_call, cand.launches_per_call) == (1, 3)
    assert cand.measured_sum_us == pytest.approx(150.9, abs=0.1)
    assert cand.main_per_launch_us == pytest.approx(82.8, abs=0.1)


def test_rms_norm_16384x2048_is_shape_specific_with_resources() -> None:
    sets = load_launch_sets(FIX / "f" / "rms_norm_16384x2048.launches.json")
    rows = [
        _row("static_persistent-4096-1024-torch.bfloat16", 0.01014, 0.00701),
        _row(P, 0.04416, 0.08278),
        _row("static_persistent-8192-8192-torch.bfloat16", 0.07624, 0.07466),
    ]
    invs = diagnose(FInputs("rms_norm", _table(rows), sets, candidate_backend="cutile"))
    assert [(i.scope, i.pattern) for i in invs] == [(P, "shape_specific")]
    inv = invs[0]
    res = next(f for f in inv.findings if f.kind == "resources")
    assert "registers/thread 255 vs 175" in res.summary and "217 KB vs 65 KB" in res.summary
    assert res.fixable and res.details["per_launch_ratio"] == pytest.approx(82.78 / 44.16, rel=0.01)
    assert inv.verdict == "FIXABLE"
    base, cand = inv.details["launch_summaries"]
    assert (base.registers_per_thread, cand.registers_per_thread) == (175, 255)
    assert (base.smem_bytes, cand.smem_bytes) == (65 * 1024, 217 * 1024)
    assert base.launches_per_call == cand.launches_per_call == 1


def test_shape_specific_with_ir_audit_adds_ir_finding() -> None:
    sets = load_launch_sets(FIX / "f" / "rms_norm_16384x2048.launches.json")
    audit = audit_files(FIX / "ir" / "rms_norm_ref_16x1024.mlir", FIX / "ir" / "rms_norm_ref_4x8192.mlir")
    rows = [_row("static_persistent-4096-1024-torch.bfloat16", 0.01014, 0.00701), _row(P, 0.04416, 0.08278)]
    inv = diagnose(
        FInputs("rms_norm", _table(rows), sets, ir_audits={None: audit}, candidate_backend="cutile")
    )[0]
    ir = next(f for f in inv.findings if f.kind == "ir")
    assert ir.fixable and "tile shape set differs" in ir.summary
    assert ir.evidence == (audit.ref_name, audit.gen_name)


def test_identical_data_is_aligned() -> None:
    s = _set("cutile", P, [("kernel", "k_entry", 50.0)], grid=(132, 1, 1), block=(256, 1, 1))
    twin = LaunchSet(s.nodeid.replace("cutile", "triton"), "triton", P, s.calls)
    rows = [_row(P, 0.05, 0.05), _row("1-2", 0.01, 0.01)]
    invs = diagnose(FInputs("k", _table(rows), [s, twin], candidate_backend="cutile"))
    assert [(i.scope, i.verdict, i.pattern) for i in invs] == [("all_shapes", "ALIGNED", "none")]


def test_slow_but_same_kernel_time_is_aligned() -> None:
    """Synthetic: E says 1.08x but per-launch captures agree within noise and IR passes."""
    text = (FIX / "ir" / "synthetic_softmax_cpp.mlir").read_text()
    from cutile_workbench.ir.audit import audit_texts

    sets = [_set("triton", P, [("kernel", "tri", 50.0)]), _set("cutile", P, [("kernel", "cut", 51.0)])]
    inv = diagnose(
        FInputs(
            "k",
            _table([_row(P, 0.050, 0.054)]),
            sets,
            ir_audits={None: audit_texts(text, text)},
            candidate_backend="cutile",
        )
    )[0]
    assert inv.verdict == "ALIGNED" and inv.details["confidence"] == "high"


def test_no_table_or_no_matched_rows_is_blocked() -> None:
    inv = diagnose(FInputs("k", None, missing=["perf_cutile_rs.txt: absent"]))[0]
    assert inv.verdict == "BLOCKED" and inv.scope == "all_shapes"
    assert any("perf_cutile_rs.txt" in f.summary for f in inv.findings)
    na = RatioRow(FUNC, P, None, "triton", None, None, None, "NA", reason="failed")
    assert diagnose(FInputs("k", _table([na])))[0].verdict == "BLOCKED"


def test_slow_without_any_evidence_is_blocked() -> None:
    inv = diagnose(FInputs("k", _table([_row(P, 0.04, 0.08)])))[0]
    assert inv.verdict == "BLOCKED"
    assert {f.kind for f in inv.findings} >= {"missing"}


def test_canary_and_fallback_are_named() -> None:
    """Synthetic: a fixed-config canary (the main kernel twice) and a hidden PyTorch fallback."""
    base = _set("cutile", P, [("kernel", "softmax_kernel_entry", 40.0)])
    canary = _set(
        "cutile-rs", P, [("kernel", "softmax_kernel_entry", 40.0), ("kernel", "softmax_kernel_entry", 40.0)]
    )
    inv = diagnose(FInputs("k", _table([_row(P, 0.04, 0.08, backend="cutile")]), [base, canary]))[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert inv.verdict == "FIXABLE" and any(e.startswith("canary") for e in lc.details["extra"])
    fb = _set(
        "cutile-rs",
        P,
        [("kernel", "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>(float*)", 60.0)],
    )
    inv = diagnose(FInputs("k", _table([_row(P, 0.04, 0.06, backend="cutile")]), [base, fb]))[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert inv.verdict == "FIXABLE" and any(e.startswith("fallback") for e in lc.details["extra"])


def test_memset_and_copy_classes() -> None:
    assert classify_kernel("Memset", "memset") == "memset"
    assert classify_kernel("Memcpy DtoD", "memcpy") == "copy"
    assert (
        classify_kernel("void at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)", "kernel")
        == "copy"
    )
    assert classify_kernel("my_kernel_entry", "kernel") == "kernel"


def test_e_table_counts_used_without_captures() -> None:
    rows = [_row(P, 0.04, 0.08, candidate_launches=2, baseline_launches=1)]
    inv = diagnose(FInputs("k", _table(rows)))[0]
    lc = next(f for f in inv.findings if f.kind == "launch_count")
    assert inv.verdict == "FIXABLE" and lc.confidence == "medium"


def test_uniform_rule() -> None:
    same = [_row(f"{i}-x", 0.01, 0.02 + i * 0.0005) for i in range(4)]
    assert classify_pattern(same)[0] == "uniform"
    spread = [_row("a", 0.01, 0.011), _row("b", 0.01, 0.03), _row("c", 0.01, 0.0105), _row("d", 0.01, 0.0111)]
    assert classify_pattern(spread)[0] == "shape_specific"
    few = [_row("a", 0.01, 0.02), _row("b", 0.01, 0.01), _row("c", 0.01, 0.01), _row("d", 0.01, 0.02)]
    pattern, slow = classify_pattern(few)
    assert pattern == "shape_specific" and len(slow) == 2
    assert classify_pattern([_row("a", 0.01, 0.0105)])[0] == "none"  # exactly 1.05 is not slow


def test_config_audit_best_config_and_key() -> None:
    a = parse_analysis(
        {
            "kernel_name": "bmm",
            "launch_path": "autotune",
            "test_perf_configs": {
                "g": {
                    "shapes": [{"id": "2-2048", "q": 2, "m": 2048, "transpose_a": False, "dtype": "float16"}]
                }
            },
            "autotune_configs": [{"TILE_M": 128, "TILE_N": 256}],
            "autotune_key": ["Q", "M"],
            "best_config": {"static_persistent": {"TILE_M": 256}},
        }
    )
    fs = config_findings(a, "reference/analysis.json")
    assert any("not in analysis.json's autotune configs" in f.summary and f.fixable for f in fs)
    key = next(f for f in fs if "autotune_key" in f.summary)
    assert key.details["missing_key_fields"] == ["transpose_a", "dtype"]
    ok = parse_analysis(
        {
            "kernel_name": "bmm",
            "launch_path": "autotune",
            "test_perf_configs": {},
            "autotune_configs": [{"TILE_M": 256}],
            "autotune_key": ["Q"],
            "best_config": {"TILE_M": 256},
        }
    )
    assert config_findings(ok, "a.json") == []
    assert config_findings(None, "a.json") == []


def test_summary_uses_the_common_signature() -> None:
    """Synthetic: one warm-up-like call with an extra memset must not change the launch count."""
    s = _set("cutile", P, [("kernel", "k", 10.0)], n=4)
    odd = CallCapture(9, "cutile", 0, 1, (Launch("memset", "Memset", 0, 500, 1), *s.calls[0].launches))
    s.calls.append(odd)
    summ = summarize_launch_set(s)
    assert summ is not None and summ.launches_per_call == 1 and (summ.calls_used, summ.calls_total) == (4, 5)


def test_static_wrapper_findings_are_cross_checked_with_launch_counts() -> None:
    """Synthetic wrapper findings (as cutile_workbench.checks.wrapper_audit emits them)."""
    from cutile_workbench.model import Finding

    canary = Finding(
        "wrapper",
        "fixed-config canary before autotune_launch",
        True,
        ("ops/cutile_rs/k.py:12",),
        "high",
        {"rule": "canary_hot_path"},
    )
    key = Finding(
        "wrapper", "cache key lacks dtype", True, ("ops/cutile_rs/k.py:30",), "medium", {"rule": "cache_key"}
    )
    equal = [_set("triton", P, [("kernel", "tri", 50.0)]), _set("cutile", P, [("kernel", "cut", 50.5)])]
    inv = diagnose(
        FInputs(
            "k", _table([_row(P, 0.05, 0.06)]), equal, wrapper_findings=[canary], candidate_backend="cutile"
        )
    )[0]
    w = next(f for f in inv.findings if f.kind == "wrapper")
    assert not w.fixable and "not confirmed" in w.summary and inv.verdict == "ALIGNED"
    extra = [
        _set("triton", P, [("kernel", "tri", 50.0)]),
        _set("cutile", P, [("kernel", "cut", 50.0), ("kernel", "cut", 50.0)]),
    ]
    inv = diagnose(
        FInputs(
            "k",
            _table([_row(P, 0.05, 0.10)]),
            extra,
            wrapper_findings=[canary, key],
            candidate_backend="cutile",
        )
    )[0]
    ws = [f for f in inv.findings if f.kind == "wrapper"]
    # issue 32: a launch count alone confirms no line (these captures carry no attribution)
    assert ws[0].fixable and ws[0].confidence == "medium" and "unconfirmed" in ws[0].summary
    assert "(confirmed" not in ws[0].summary
    assert ws[1] == key  # not a hot-path rule: passed through unchanged


@pytest.mark.parametrize(
    ("floor", "verdict"),
    [
        (0.95, "ALIGNED"),  # the band (1.95x) holds the 1.875x per-launch gap: noise, nothing decides
        (0.88, "ALIGNED"),  # just above the gap (band 1.88x): still noise
        (0.87, "FIXABLE"),  # just below it (band 1.87x): a real gap, the resource finding decides
    ],
)
def test_resource_finding_decides_only_with_a_real_gap(floor: float, verdict: str) -> None:
    """V3's gate covers the resource rule, not only the config rule (issue 35: ``_GAP_GATED_KINDS``
    without "resources" survived). The 16384x2048 captures (synthetic from the real H200 facts, README):
    per-launch 82.78 vs 44.16 us = 1.875x, 255 vs 175 registers/thread (the candidate at the cap).
    SYNTHETIC: the row's A/A noise floor, set around that gap so the per-launch gap turns noise."""
    sets = load_launch_sets(FIX / "f" / "rms_norm_16384x2048.launches.json")
    row = _row(P, 0.04416, 0.08278, noise_floor=floor)
    (inv,) = diagnose(FInputs("rms_norm", _table([row]), sets, candidate_backend="cutile"))
    res = next(f for f in inv.findings if f.kind == "resources")
    assert "registers/thread 255 vs 175" in res.summary
    assert inv.verdict == verdict
    assert res.fixable is (verdict == "FIXABLE")
    gap = next(f for f in inv.findings if f.kind == "gap")
    assert gap.details["status"] == ("real" if verdict == "FIXABLE" else "noise")
    if verdict == "ALIGNED":
        assert "not decisive" in res.summary and res.confidence == "low"
