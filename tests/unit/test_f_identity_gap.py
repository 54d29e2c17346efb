"""Kernel identity per config (f_evidence.identity) and the per-launch gap rule (f_evidence.gap).

Kernel names: REAL ones from the recorded sessions and TileGym's H200 logs (cuTile mangling, Triton),
plus the cutile-rs ``<fn>_entry`` convention of gpu.md §6. ConfigKernels lists and samples are SYNTHETIC.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.evidence.gap import assess_gap, interval_from_spread
from cutile_workbench.evidence.identity import (
    ConfigKernels,
    dispatch_findings,
    kernel_stem,
    record_kernel,
    variant_of_kernel,
)
from cutile_workbench.model import PhaseStats, RatioRow

H200 = Path(__file__).parent.parent / "fixtures" / "tilegym_h200" / "harness"
FUNC = "tests/ops/test_matmul.py::Test_Matmul::test_perf"
KFN = {"static_persistent": "_static_persistent_matmul_kernel", "non_persistent": "_matmul_kernel"}


def test_kernel_stems_of_real_names() -> None:
    cutile = parse_perf_log(H200 / "baseline_perf_cutile.txt", strict=True).records[0]
    triton = parse_perf_log(H200 / "baseline_perf_triton_tileir.txt", strict=True).records[0]
    assert kernel_stem(record_kernel(cutile) or "") == "rms_norm_kernel_static_persistent"
    assert kernel_stem(record_kernel(triton) or "") == "rms_norm_kernel_static_persistent"
    assert kernel_stem("silu_and_mul_kernel_entry") == "silu_and_mul_kernel"
    assert (
        kernel_stem("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)")
        == "vectorized_elementwise_kernel"
    )


def test_variant_of_kernel_prefers_exact_then_longest_suffix() -> None:
    assert variant_of_kernel("static_persistent_matmul_kernel_entry", KFN) == "static_persistent"
    assert variant_of_kernel("non_persistent_matmul_kernel_entry", KFN) == "non_persistent"
    assert variant_of_kernel("_matmul_kernel_Kt1_A2f16_1v8l0_I128_I128_I32", KFN) == "non_persistent"
    assert variant_of_kernel("softmax_kernel_entry", KFN) is None


def _ck(params: str, variant: str, cand: str, base: str) -> ConfigKernels:
    return ConfigKernels(
        params,
        variant,
        cand,
        base,
        "kernel_times",
        variant_of_kernel(cand, KFN),
        variant_of_kernel(base, KFN),
    )


def test_one_candidate_kernel_for_two_variants_is_a_wrong_dispatch() -> None:
    """SYNTHETIC: both variants' configs run the persistent cutile-rs entry; the references differ."""
    entries = [
        _ck(
            "a",
            "static_persistent",
            "static_persistent_matmul_kernel_entry",
            "_static_persistent_matmul_kernel_Kt1_A2f16_I256",
        ),
        _ck("b", "non_persistent", "static_persistent_matmul_kernel_entry", "_matmul_kernel_Kt1_A2f16_I128"),
    ]
    (f,) = dispatch_findings(entries, ["perf_cutile_rs.txt"])
    assert f.kind == "dispatch" and f.fixable and f.confidence == "high"
    assert f.details["rule"] == "one_kernel_for_variants" and f.details["configs"] == ["a", "b"]
    assert "static_persistent_matmul_kernel" in f.summary and "wrong variant" in f.summary


def test_a_config_hitting_another_variants_kernel_is_a_wrong_dispatch() -> None:
    entries = [
        _ck("a", "non_persistent", "static_persistent_matmul_kernel_entry", "_matmul_kernel_Kt1_A2f16")
    ]
    (f,) = dispatch_findings(entries)
    assert f.details == {**f.details, "rule": "config_hits_other_variant", "ran_variant": "static_persistent"}


def test_same_kernel_on_both_sides_or_shared_reference_kernel_is_no_finding() -> None:
    ok = [
        _ck(
            "a",
            "static_persistent",
            "static_persistent_matmul_kernel_entry",
            "_static_persistent_matmul_kernel",
        ),
        _ck("b", "non_persistent", "non_persistent_matmul_kernel_entry", "_matmul_kernel"),
    ]
    assert dispatch_findings(ok) == []
    shared = [_ck("a", "v1", "k_entry", "ref_kernel"), _ck("b", "v2", "k_entry", "ref_kernel")]
    assert dispatch_findings(shared) == []


# --------------------------------------------------------------------------- gap


def test_gap_from_captures_real_noise_and_unresolved() -> None:
    """SYNTHETIC per-launch durations (ns)."""
    base = [50_000 + (i % 7) * 20 for i in range(100)]
    assert assess_gap(cand_per_launch_ns=[x * 1.02 for x in base], base_per_launch_ns=base).status == "noise"
    real = assess_gap(cand_per_launch_ns=[x * 1.3 for x in base], base_per_launch_ns=base)
    assert real.status == "real" and real.ci is not None and real.ci[0] > 1.05
    noisy = [40_000 if i % 2 else 90_000 for i in range(20)]
    unresolved = assess_gap(cand_per_launch_ns=noisy, base_per_launch_ns=[50_000] * 19 + [30_000])
    assert unresolved.status == "unresolved" and unresolved.ci is not None and unresolved.ci[0] <= 1.05


def _row(ratio: float, ci: tuple[float, float] | None = None) -> RatioRow:
    return RatioRow(
        FUNC,
        "p",
        None,
        "cutile",
        0.1,
        0.1 * ratio,
        ratio,
        "OK",
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
    )


def test_gap_from_e_medians_uses_the_row_ci_then_rel_std() -> None:
    assert assess_gap(row=_row(1.3, (1.28, 1.33)), one_launch_each=True).status == "real"
    assert assess_gap(row=_row(1.3, (1.01, 1.6)), one_launch_each=True).status == "unresolved"
    tight = PhaseStats(median_ms=0.1, rel_std_pct=0.5, nrep=100)
    loose = PhaseStats(median_ms=0.1, rel_std_pct=80.0, nrep=5)
    g = assess_gap(row=_row(1.2), one_launch_each=True, cand_stats=tight, base_stats=tight)
    assert g.status == "real" and g.ci is not None and "rel_std" in g.basis
    assert (
        assess_gap(row=_row(1.2), one_launch_each=True, cand_stats=loose, base_stats=loose).status
        == "unresolved"
    )
    point = assess_gap(row=_row(1.2), one_launch_each=True)
    assert point.status == "real" and point.ci is None and "point estimate" in point.reason
    lo, hi = interval_from_spread(1.0, tight, tight) or (0, 0)
    assert lo == pytest.approx(1 / hi, rel=1e-9) and 0.99 < lo < 1.0


def test_gap_unknown_without_times() -> None:
    assert assess_gap().status == "unknown"
