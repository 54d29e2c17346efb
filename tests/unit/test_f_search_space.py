"""Seed F step 3 (cutile_workbench.evidence.search_space) on REAL TileGym wrappers, arch branches resolved.

tests/fixtures/f/tilegym_75a1430/: verbatim excerpts of TileGym 75a1430's cutile-rs wrappers and the
reference cuTile wrappers (README). analysis.json documents built here are SYNTHETIC (labelled per test).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cutile_workbench.artifacts.analysis import parse_analysis
from cutile_workbench.checks.static_eval import Assumptions, StaticEvaluator, Unresolvable
from cutile_workbench.errors import InputError
from cutile_workbench.evidence.search_space import (
    AUTO,
    ConfigSpace,
    TuneConfig,
    audit_search_space,
    canonical_knob,
    compare_spaces,
    match_variant,
    reference_wrapper_spaces,
    wrapper_spaces,
)

TG = Path(__file__).parent.parent / "fixtures" / "f" / "tilegym_75a1430"
RS, REF = TG / "cutile_rs", TG / "cutile"


def _variants(kernel: str) -> object:
    """SYNTHETIC analysis.json: the two structural variants with TileGym's real kernel function names."""
    return parse_analysis(
        {
            "kernel_name": kernel,
            "kernel_variants": [
                {
                    "variant_name": "static_persistent",
                    "kernel_function": f"_static_persistent_{kernel}_kernel",
                    "reference_ir": "reference/reference_static_persistent.mlir",
                },
                {
                    "variant_name": "non_persistent",
                    "kernel_function": f"_{kernel}_kernel",
                    "reference_ir": "reference/reference_non_persistent.mlir",
                },
            ],
        }
    )


def _audit(kernel: str, analysis: object = None, cap: tuple[int, int] = (9, 0)):  # type: ignore[no-untyped-def]
    return audit_search_space(
        candidate_wrapper=RS / f"{kernel}.py",
        reference_wrapper=REF / f"{kernel}.py",
        analysis=analysis,
        capability=cap,
        capability_source="test",
        kernel=kernel,
    )


def test_static_evaluator_runs_config_generators_with_the_sessions_capability() -> None:
    tree = ast.parse((REF / "bmm.py").read_text())
    counts = {}
    for cap in ((9, 0), (10, 0), (8, 0), (12, 0)):
        ev = StaticEvaluator(Assumptions(device_capability=cap))
        ev.run_body(tree.body)
        counts[cap] = len(ev.run_function(ev.functions["_bmm_autotune_configs"]).items)
    # TileGym 75a1430 _bmm_autotune_configs: sm_90 3x3x1x2, other (GB100) 2, sm_80 2x2x3x2, sm_12x 2x2x2x3
    assert counts == {(9, 0): 18, (10, 0): 2, (8, 0): 24, (12, 0): 24}


def test_static_evaluator_refuses_what_it_does_not_model() -> None:
    ev = StaticEvaluator()
    ev.run_body(ast.parse("def f():\n    while True:\n        yield 1\n").body)
    with pytest.raises(Unresolvable) as exc:
        ev.run_function(ev.functions["f"])
    assert exc.value.line == 2


def test_cutile_rs_wrapper_configs_are_read_statically() -> None:
    spaces, notes = wrapper_spaces(RS / "matmul.py", (9, 0))
    assert notes == []
    by_fn = {s.function: s for s in spaces}
    assert set(by_fn) == {"_static_persistent_configs", "_non_persistent_configs"}
    sp = by_fn["_static_persistent_configs"]
    assert len(sp.configs) == 4 and sp.knobs == {"tile_m", "tile_n", "tile_k", "num_ctas", "occupancy"}
    assert sp.constants["group_size_m"] == 8  # _GROUP_SIZE_M = 8, a module constant
    first = next(
        i
        for i, ln in enumerate((RS / "matmul.py").read_text().splitlines(), 1)
        if "SimpleNamespace(BM=128, BN=512" in ln
    )
    assert sp.configs[0].where.endswith(f"matmul.py:{first}")  # each config cites its source line
    silu, _ = wrapper_spaces(RS / "silu_and_mul.py")
    assert [c.knobs for c in silu[0].configs] == [(("num_ctas", AUTO), ("occupancy", AUTO))]


def test_reference_spaces_pair_each_generator_with_its_kernel() -> None:
    spaces, notes = reference_wrapper_spaces(REF / "matmul.py", (9, 0))
    assert notes == []
    assert {(s.function, s.kernel, len(s.configs)) for s in spaces} == {
        ("_matmul_autotune_configs", "_matmul_kernel", 4),
        ("_static_persistent_matmul_autotune_configs", "_static_persistent_matmul_kernel", 5),
    }


def test_matmul_sm90_static_persistent_lacks_the_small_tile_config() -> None:
    audit = _audit("matmul", _variants("matmul"))
    comps = {c.variant: c for c in audit.comparisons}
    sp, np_ = comps["static_persistent"], comps["non_persistent"]
    assert [m.label for m in sp.missing] == [
        "group_size_m=8 latency=auto num_ctas=1 occupancy=1 tile_k=64 tile_m=128 tile_n=128"
    ]
    assert sp.fixed_knobs["group_size_m"].startswith("reference 8, candidate constant 8")
    assert "latency" not in sp.absent_knobs  # LOAD_LATENCY=-1 everywhere: compiler-inferred on both sides
    assert np_.covers_reference and np_.missing == ()
    finding = next(f for f in audit.findings() if f.details["variant"] == "static_persistent")
    assert finding.fixable and finding.confidence == "medium"  # "would be": the gap decides (diagnosis V3)
    assert "1 of the reference's 5 config(s) are absent" in finding.summary


def test_bmm_search_space_depends_on_the_gpu() -> None:
    """sm_90: the reference sweeps 18 configs, the cutile-rs wrapper ("for sm100") carries 2."""
    h200 = _audit("bmm", _variants("bmm"))
    sp = next(c for c in h200.comparisons if c.variant == "static_persistent")
    assert (len(sp.candidate.configs), len(sp.reference.configs), len(sp.missing)) == (2, 18, 16)
    assert any("not autotuned there" in n for n in h200.notes)  # non_persistent: nothing to compare
    b200 = _audit("bmm", _variants("bmm"), cap=(10, 0))
    assert next(c for c in b200.comparisons if c.variant == "static_persistent").covers_reference


def test_without_analysis_variants_spaces_pair_by_name() -> None:
    audit = _audit("attention_sink")
    (comp,) = audit.comparisons
    assert (len(comp.candidate.configs), len(comp.reference.configs), len(comp.missing)) == (4, 18, 14)
    assert comp.fixed_knobs["num_ctas"].startswith("reference always 1")
    bmm = _audit("bmm")
    assert [c.candidate.function for c in bmm.comparisons] == ["_persistent_configs"]


def test_best_config_from_analysis_is_checked_against_the_wrapper() -> None:
    """SYNTHETIC analysis.json: best_config of the static_persistent variant = the config the wrapper lacks."""
    a = parse_analysis(
        {
            "kernel_name": "matmul",
            "kernel_variants": [
                {
                    "variant_name": "static_persistent",
                    "kernel_function": "_static_persistent_matmul_kernel",
                    "reference_ir": "x",
                },
                {"variant_name": "non_persistent", "kernel_function": "_matmul_kernel", "reference_ir": "y"},
            ],
            "best_config": {
                "static_persistent": {
                    "TILE_SIZE_M": 128,
                    "TILE_SIZE_N": 128,
                    "TILE_SIZE_K": 64,
                    "num_ctas": 1,
                    "occupancy": 1,
                },
                "non_persistent": {
                    "TILE_SIZE_M": 256,
                    "TILE_SIZE_N": 256,
                    "TILE_SIZE_K": 64,
                    "num_ctas": 2,
                    "occupancy": 1,
                },
            },
        }
    )
    audit = _audit("matmul", a)
    comps = {c.variant: c for c in audit.comparisons}
    assert comps["static_persistent"].best_present is False and comps["non_persistent"].best_present is True
    f = next(x for x in audit.findings() if x.details["variant"] == "static_persistent")
    assert f.confidence == "high" and "reference best config" in f.summary and "is absent" in f.summary


def test_analysis_configs_win_over_the_reference_wrapper() -> None:
    """SYNTHETIC analysis.json listing a latency knob the cutile-rs wrapper cannot tune."""
    a = parse_analysis(
        {
            "kernel_name": "silu_and_mul",
            "autotune_configs": [{"OCCUPANCY": 1, "num_stages": 2}, {"OCCUPANCY": 2, "num_stages": 3}],
        }
    )
    audit = audit_search_space(
        candidate_wrapper=RS / "silu_and_mul.py",
        reference_wrapper=None,
        analysis=a,
        capability=(9, 0),
        capability_source="test",
    )
    (comp,) = audit.comparisons
    assert comp.reference.origin == "reference/analysis.json autotune_configs"
    assert dict(comp.absent_knobs) == {"latency": (2, 3)} and len(comp.missing) == 2


def test_knob_spellings_and_auto_values() -> None:
    assert {canonical_knob(n) for n in ("BM", "TILE_M", "TILE_SIZE_M", "_BLOCK_M")} == {"tile_m"}
    assert {canonical_knob(n) for n in ("NUM_CTAS", "NUM_CTA_IN_CGA", "num_ctas")} == {"num_ctas"}
    assert canonical_knob("LOAD_LATENCY") == canonical_knob("num_stages") == "latency"
    assert TuneConfig.of({"OCCUPANCY": None, "NUM_CTA_IN_CGA": -1}).knobs == (
        ("num_ctas", AUTO),
        ("occupancy", AUTO),
    )
    cand = ConfigSpace("c", (TuneConfig.of({"BM": 128, "NUM_CTAS": 2}),))
    ref = ConfigSpace("r", (TuneConfig.of({"TILE_SIZE_M": 128, "num_ctas": 2}),))
    assert compare_spaces(cand, ref, None).covers_reference


def test_variant_name_matching_respects_negation() -> None:
    variants = ["static_persistent", "non_persistent"]
    assert match_variant("_persistent_configs", variants) == "static_persistent"
    assert match_variant("_non_persistent_configs", variants) == "non_persistent"
    assert match_variant("_configs", variants) is None


def test_unreadable_wrapper_is_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "src" / "tilegym" / "ops" / "cutile_rs" / "k.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def _configs(:\n")
    with pytest.raises(InputError) as exc:
        wrapper_spaces(bad)
    assert exc.value.line == 1 and "k.py" in str(exc.value.path)
