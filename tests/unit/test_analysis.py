"""analysis.json loader: both test_perf_configs forms, tolerant reads, errors naming line or key.

The bmm document is the contract's §2.2 example (realistic, valid against validate_analysis.sh);
the malformed variants are SYNTHETIC edge cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cutile_workbench.artifacts.analysis import load_analysis, parse_analysis
from cutile_workbench.errors import InputError

BMM = {
    "kernel_name": "bmm",
    "source": "src/tilegym/ops/cutile/bmm.py",
    "launch_path": "autotune",
    "pattern": "multi_variant",
    "ops_used": ["mmaf"],
    "reference_backend": "cutile",
    "reference_backend_selection": {
        "method": "CUPTI geomean",
        "cutile_geomean_ms": 0.7412,
        "triton_tileir_geomean_ms": None,
        "winner": "cutile",
        "per_variant": {
            "static_persistent": {"winner": "cutile", "cutile_geomean_ms": 0.7412},
            "non_persistent": {"winner": "cutile", "note": "not on the test_perf surface"},
        },
    },
    "test_perf_configs": {
        "static_persistent": {
            "test": "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf",
            "k_filter": "cutile and not cutile_rs and False-False",
            "shapes": [
                {"id": "2-2048-2048-2048-False-False-torch.float16", "q": 2},
                {"id": "8-4096-4096-4096-False-False-torch.float16", "q": 8},
            ],
        }
    },
    "kernel_variants": [
        {
            "variant_name": "static_persistent",
            "kernel_function": "_static_persistent_bmm_kernel",
            "reference_ir": "reference/reference_static_persistent.mlir",
            "reference_backend": "cutile",
            "autotune_configs": [{"TILE_M": 128, "TILE_N": 256, "TILE_K": 64, "occupancy": 1, "num_ctas": 2}],
        },
        {
            "variant_name": "non_persistent",
            "kernel_function": "_bmm_kernel",
            "reference_ir": "reference/reference_non_persistent.mlir",
            "autotune_configs": None,
        },
    ],
    "config_to_variant": {"2-2048-2048-2048-False-False-torch.float16": "static_persistent"},
    "autotune_key": ["Q", "M", "N", "K", "transpose_a", "transpose_b", "dtype", "device"],
    "autotune_configs": [{"TILE_M": 128, "TILE_N": 256, "TILE_K": 64}],
    "best_config": {"static_persistent": {"TILE_M": 256}},
}


def test_contract_example_parses() -> None:
    a = parse_analysis(BMM)
    assert a.reference_backend == "cutile"
    assert a.reference_backend_selection is not None
    assert a.reference_backend_selection.per_variant["static_persistent"].cutile_geomean_ms == 0.7412
    g = a.test_perf_configs[0]
    assert (g.name, g.test, g.k_filter) == (
        "static_persistent",
        BMM["test_perf_configs"]["static_persistent"]["test"],
        "cutile and not cutile_rs and False-False",
    )
    assert [s.id for s in g.shapes] == [
        "2-2048-2048-2048-False-False-torch.float16",
        "8-4096-4096-4096-False-False-torch.float16",
    ]
    assert g.shapes[0].params["q"] == 2
    assert a.selected_ids == [s.id for s in g.shapes]
    assert a.variant_of("2-2048-2048-2048-False-False-torch.float16") == "static_persistent"
    assert a.winner_for("static_persistent") == "cutile"
    assert a.kernel_variants[1].autotune_configs == ()
    assert a.autotune_key[-1] == "device" and a.best_config == {"static_persistent": {"TILE_M": 256}}


def test_list_forms_and_tolerance() -> None:
    doc = {
        "test_perf_configs": [{"param_list": ["a-1", {"id": "b-2"}, [1, 2, "x"]]}, "c-3"],
        "reference_backend_selection": {"winner": "triton", "cutile_geo_mean_ms": 1.5},
        "extra": {"x": 1},
    }
    a = parse_analysis(doc)
    assert [[s.id for s in g.shapes] for g in a.test_perf_configs] == [["a-1", "b-2", None], ["c-3"]]
    assert a.test_perf_configs[0].shapes[2].label == "1-2-x"
    assert a.reference_backend_selection is not None
    assert a.reference_backend_selection.cutile_geomean_ms == 1.5  # the validator's spelling
    assert a.winner_for(None) == "triton"
    empty = parse_analysis({"test_perf_configs": []})  # A's template (fails A's validator, still readable)
    assert empty.test_perf_configs == () and empty.selected_ids == []


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        (
            {"test_perf_configs": {"static_persistent": {"shapes": [{"id": "a"}, 5]}}},
            "test_perf_configs.static_persistent.shapes[1]",
        ),
        ({"test_perf_configs": {"g": {"shapes": [{"id": 7}]}}}, "test_perf_configs.g.shapes[0].id"),
        ({"test_perf_configs": {"g": {"shapes": "a"}}}, "test_perf_configs.g.shapes"),
        ({"test_perf_configs": 3}, "test_perf_configs"),
        ({"reference_backend": 1}, "reference_backend"),
        (
            {"reference_backend_selection": {"per_variant": {"v": {"winner": 2}}}},
            "reference_backend_selection.per_variant.v.winner",
        ),
        (
            {"reference_backend_selection": {"cutile_geomean_ms": "fast"}},
            "reference_backend_selection.cutile_geomean_ms",
        ),
        ({"kernel_variants": {"a": 1}}, "kernel_variants"),
        (
            {"kernel_variants": [{"variant_name": "v", "autotune_configs": [1]}]},
            "kernel_variants[0].autotune_configs[0]",
        ),
        ({"kernel_variants": [{}]}, "kernel_variants[0].variant_name"),
        ({"config_to_variant": {"a": 3}}, "config_to_variant.a"),
        ({"autotune_key": "Q"}, "autotune_key"),
        ({"autotune_configs": {"TILE_M": 1}}, "autotune_configs"),
        ({"best_config": [1]}, "best_config"),
    ],
)
def test_wrong_types_name_the_key(tmp_path: Path, doc: dict, key: str) -> None:
    p = tmp_path / "analysis.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(InputError) as ei:
        load_analysis(p)
    assert ei.value.key == key and ei.value.path == str(p)
    assert f"key '{key}'" in str(ei.value)


@pytest.mark.parametrize(
    ("text", "line"), [("", 1), ('{\n  "a": 1,\n  oops\n}', 3), ("[1,\n2", 2), ('{"a":\n\n\n', 4)]
)
def test_invalid_json_names_the_line(tmp_path: Path, text: str, line: int) -> None:
    p = tmp_path / "analysis.json"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        load_analysis(p)
    assert ei.value.line == line


def test_not_an_object_and_bad_bytes(tmp_path: Path) -> None:
    p = tmp_path / "analysis.json"
    p.write_text("[1, 2]")
    with pytest.raises(InputError, match="top level"):
        load_analysis(p)
    p.write_bytes(b'{"a":\n "\xff"}')
    with pytest.raises(InputError) as ei:
        load_analysis(p)
    assert ei.value.line == 2
    with pytest.raises(InputError):
        load_analysis(tmp_path / "missing.json")


def test_fuzz_never_crashes() -> None:
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies
    json_values = st.recursive(
        st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
        max_leaves=20,
    )
    keys = st.sampled_from([*BMM, "shapes", "param_list", "id", "winner", "per_variant"])

    @hyp.given(st.dictionaries(keys, json_values, max_size=6), st.booleans())
    def check(patch: dict, start_from_bmm: bool) -> None:
        doc = {**BMM, **patch} if start_from_bmm else patch
        try:
            parse_analysis(doc)
        except InputError as exc:
            assert exc.key or exc.message

    check()


def test_seeded_byte_mutations_of_a_real_file(tmp_path: Path) -> None:
    """Seeded mutation (flip/insert/delete/truncate bytes) of the recorded rms_norm analysis.json:
    every outcome is a parse or an InputError naming the file (line or key), never a traceback."""
    import os
    import random

    from cutile_workbench.artifacts.workspace import recorded_session_root

    root = recorded_session_root("rms_norm")
    src = (root / "rms_norm/reference/analysis.json") if root else None
    if src is None or not src.is_file():
        src = Path(__file__).parent.parent / "fixtures/e/real/rms_norm/reference/analysis.json"
    data = src.read_bytes()
    rng = random.Random(1234)
    n = 10_000 if os.environ.get("HYPOTHESIS_PROFILE") == "fuzz" else 400
    p = tmp_path / "analysis.json"
    rejected = 0
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            op = rng.randrange(4)
            i = rng.randrange(len(b)) if b else 0
            if op == 0 and b:
                b[i] = rng.randrange(256)
            elif op == 1:
                b[i:i] = bytes([rng.choice(b'{}[]",:0123456789.-eE \\ntruefalsn')])
            elif op == 2 and b:
                del b[i]
            else:
                del b[rng.randrange(len(b) + 1) :]
        p.write_bytes(bytes(b))
        try:
            load_analysis(p)
        except InputError as exc:
            rejected += 1
            assert exc.path == str(p) and (exc.line is not None or exc.key is not None or exc.message)
    assert rejected > n // 4
