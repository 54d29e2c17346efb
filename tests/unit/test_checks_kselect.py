"""Config selection (-k builder), static test ids and the selection comparison.

Synthetic trees come from tests/fixtures/tilegym_tree/fake_tilegym.py (labelled there); the
real-TileGym tests read the fetched snapshot and skip when it is absent. Collect-only on the real
snapshot needs torch, which CI lacks, so there the -k builder is checked against ids derived
statically from the parametrize decorators with ast (and the id derivation itself is checked
against the counts and example ids the contract recorded from a real H200 collection, §3.4).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from checks_helpers import fake
from tilegym_snapshot import needs_test_files

from cutile_workbench.checks.childproc import collect_nodeids
from cutile_workbench.checks.kselect import (
    build_k_expressions,
    compare_selections,
    k_term,
    perf_configs,
    simulate_k,
)
from cutile_workbench.checks.static_eval import Assumptions
from cutile_workbench.checks.testfile import load_test_module
from cutile_workbench.errors import InputError

REPO = Path(__file__).resolve().parents[2]
TILEGYM = REPO / ".fetched" / "TileGym"
#: the contract doc's §2.2 bmm example analysis.json (shared/docs/tilegym-contract.md), kept in the repo
#: so the test runs wherever the repo is (it read the doc by an absolute path and skipped elsewhere)
CONTRACT_EXAMPLE = REPO / "tests/fixtures/checks/contract_2_2_bmm_analysis.json"
needs_tilegym = needs_test_files()


@pytest.fixture(autouse=True)
def _fast_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """Child pytest runs collect synthetic trees that need no plugins; autoloading this venv's
    plugins (textual snapshots, hypothesis, ...) costs ~4 s per child on the shared CI box."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


BMM_IDS = ["2-2048-2048-2048-False-False-torch.float16", "8-4096-4096-4096-False-False-torch.float16"]


def _dict_form() -> dict:
    return {
        "test_perf_configs": {
            "static_persistent": {
                "test": "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf",
                "k_filter": "cutile and not cutile_rs and False-False",
                "shapes": [{"id": BMM_IDS[0], "q": 2}, {"id": BMM_IDS[1], "q": 8}],
            }
        }
    }


def _list_form() -> dict:
    # list form (validate_analysis.sh counts c["param_list"]); element contents are free-form
    return {
        "test_perf_configs": [
            {
                "test": "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf",
                "param_list": [BMM_IDS[0], "cutile-" + BMM_IDS[1]],
            }
        ]
    }


# ----------------------------------------------------------------------------- analysis forms


def test_dict_and_list_forms_give_the_same_expressions() -> None:
    a = build_k_expressions(_dict_form(), "cutile-rs", "cutile")
    b = build_k_expressions(_list_form(), "cutile-rs", "cutile")
    assert [t.expr for t in a.candidate] == [t.expr for t in b.candidate]
    assert [t.expr for t in a.baseline] == [t.expr for t in b.baseline]
    assert a.candidate[0].params == tuple(BMM_IDS)
    assert a.exact and b.exact


def test_expressions_anchor_on_token_and_guard_cutile_prefix() -> None:
    sel = build_k_expressions(_dict_form(), "cutile-rs", "cutile")
    cand, base = sel.candidate[0], sel.baseline[0]
    assert cand.token == "cutile_rs"
    assert f"[cutile_rs-{BMM_IDS[0]}]" in cand.expr
    assert "not" not in cand.expr  # no other token contains cutile_rs
    assert base.expr.endswith("and not cutile_rs")  # "cutile" also matches "cutile_rs" (§3.4)
    assert f"[cutile-{BMM_IDS[1]}]" in base.expr
    assert cand.command("python").startswith(
        "python -m pytest tests/ops/test_bmm.py::Test_BMM_FWD::test_perf -k "
    )


def test_value_only_configs_resolve_through_static_cases(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path)
    module = load_test_module(root / "tests/ops/test_bmm.py", root)
    fn = module.find("Test_BMM_FWD::test_perf")
    test = module.func_key(fn)
    cases = {test: module.derive_cases(fn, Assumptions())}
    analysis = {
        "test_perf_configs": [
            {
                "param_list": [
                    {
                        "q": 2,
                        "m": 2048,
                        "n": 2048,
                        "k": 2048,
                        "transpose_a": False,
                        "transpose_b": False,
                        "dtype": "float16",
                    },
                    [8, 4096, 4096, 4096, True, False, "torch.float16"],
                ]
            }
        ]
    }
    sel = build_k_expressions(analysis, "cutile_rs", "cutile", cases_by_test=cases, default_test=test)
    assert sel.candidate[0].params == (
        "2-2048-2048-2048-False-False-torch.float16",
        "8-4096-4096-4096-True-False-torch.float16",
    )


@pytest.mark.parametrize(
    ("doc", "key"),
    [
        ({}, "test_perf_configs"),
        ({"test_perf_configs": "x"}, "test_perf_configs"),
        ({"test_perf_configs": {"g": []}}, "test_perf_configs.g"),
        ({"test_perf_configs": {"g": {"shapes": {}}}}, "test_perf_configs.g.shapes"),
        ({"test_perf_configs": {"g": {"shapes": [42]}}}, "test_perf_configs.g.shapes[0]"),
        ({"test_perf_configs": {"g": {"shapes": [{"id": 3}]}}}, "test_perf_configs.g.shapes[0].id"),
        ({"test_perf_configs": [{"param_list": "a"}]}, "test_perf_configs[0].param_list"),
        ({"test_perf_configs": [{"param_list": []}]}, "test_perf_configs"),
        ({"test_perf_configs": [{"param_list": [{"q": 2}]}]}, "test_perf_configs[0].param_list[0]"),
    ],
)
def test_bad_analysis_names_the_key(doc: dict, key: str) -> None:
    with pytest.raises(InputError) as err:
        build_k_expressions(doc, "cutile-rs", "cutile")
    assert err.value.key == key
    assert err.value.exit_code == 2


def test_same_token_both_sides_is_refused() -> None:
    with pytest.raises(InputError):
        build_k_expressions(_dict_form(), "cutile-rs", "cutile_rs")


def test_ids_with_unspellable_characters_fall_back_to_fragments() -> None:
    term, exact = k_term("cutile", "(256, 64, 16, 128)-3-torch.float16-none")
    assert not exact
    assert term == "([cutile- and 256 and 64 and 16 and 128 and -3-torch.float16-none])"


def test_analysis_object_from_load_analysis_is_accepted(tmp_path: Path) -> None:
    analysis_mod = pytest.importorskip("cutile_workbench.artifacts.analysis")
    path = tmp_path / "analysis.json"
    doc = {"kernel_name": "bmm", "source": "s", "launch_path": "direct", "pattern": "single", "ops_used": []}
    doc.update(_list_form())
    path.write_text(json.dumps(doc))
    analysis = analysis_mod.load_analysis(path)
    assert [c.params for c in perf_configs(analysis)] == BMM_IDS


# ----------------------------------------------------------------------------- comparing sides


def test_compare_selections() -> None:
    f = "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf"
    cand = [f"{f}[cutile_rs-{BMM_IDS[0]}]", f"{f}[cutile_rs-{BMM_IDS[1]}]"]
    base = [f"{f}[cutile-{BMM_IDS[0]}]", f"{f}[cutile-{BMM_IDS[1]}]"]
    assert compare_selections(cand, base).ok
    diff = compare_selections(cand, base[:1])
    assert not diff.ok and diff.candidate_only == {(f, BMM_IDS[1])}
    assert "candidate only" in diff.describe()
    mixed = compare_selections([*cand, f"{f}[cutile_rs-x]"], [*base, f"{f}[cutile_rs-x]"])
    assert not mixed.ok and any("several backends" in p for p in mixed.problems)
    assert not compare_selections([], []).ok


# ----------------------------------------------------------------------------- real pytest -k


def test_simulated_k_matches_real_pytest_collection(tmp_path: Path) -> None:
    """The expressions select, in a real pytest child, exactly what simulate_k predicts."""
    root = fake.make_tree(tmp_path, tests={"test_matmul.py": fake.TEST_MATMUL})
    module = load_test_module(root / "tests/ops/test_matmul.py", root)
    fn = module.find("Test_Matmul::test_perf")
    ids = module.derive_nodeids(fn, Assumptions())
    target = module.func_key(fn)
    full = collect_nodeids(sys.executable, root, target, None, timeout_s=120)
    assert full.ok and sorted(full.nodeids) == sorted(ids)  # static derivation == pytest's ids
    params = "True-False-False-False-2048-2048-2048-torch.float16"
    analysis = {"test_perf_configs": [{"test": target, "param_list": [params]}]}
    sel = build_k_expressions(analysis, "cutile-rs", "cutile")
    cand = collect_nodeids(sys.executable, root, target, sel.candidate[0].expr, timeout_s=120)
    base = collect_nodeids(sys.executable, root, target, sel.baseline[0].expr, timeout_s=120)
    assert list(cand.nodeids) == simulate_k(ids, sel.candidate[0].expr) == [f"{target}[cutile_rs-{params}]"]
    assert list(base.nodeids) == simulate_k(ids, sel.baseline[0].expr) == [f"{target}[cutile-{params}]"]
    assert compare_selections(cand.nodeids, base.nodeids).ok
    # the traps, in real pytest: "cutile" matches cutile_rs; "False-False" matches other axes
    trap = collect_nodeids(sys.executable, root, target, "cutile and False-False", timeout_s=120)
    assert {n.split("[")[1].split("-")[0] for n in trap.nodeids} == {"cutile", "cutile_rs"}
    assert any("-True-2048" in n or "-True-4096" in n for n in trap.nodeids)


# ----------------------------------------------------------------------------- real TileGym


# (file, qualname) -> test_perf items collected on the H200 without cutile-rs/tilecpp (contract §3.4)
H200_COUNTS = {
    ("test_bmm.py", "Test_BMM_FWD::test_perf"): 48,
    ("test_matmul.py", "Test_Matmul::test_perf"): 336,
    ("test_matmul.py", "Test_Matmul::test_perf_llm"): 24,
    ("test_silu_and_mul.py", "Test_SiLUAndMul::test_perf"): 16,
    ("test_swiglu.py", "Test_SwiGLU::test_perf"): 2,
    ("test_attention_sink.py", "Test_AttentionSink::test_perf"): 16,
    ("test_rms_norm.py", "Test_RMSNorm::test_perf"): 30,
    ("test_dropout.py", "Test_Dropout::test_perf"): 48,
    ("test_rope.py", "Test_RoPE::test_perf"): 36,
    ("test_layer_norm_legacy.py", "Test_LayerNorm::test_perf"): 30,
    ("test_layer_norm_legacy.py", "Test_PersistentLayerNorm::test_perf"): 15,
    ("test_mla_decoding.py", "Test_MLADecoding::test_perf"): 144,
    ("test_moe.py", "Test_MOE::test_perf"): 4,
}
H200_EXAMPLES = [
    "test_bmm.py::Test_BMM_FWD::test_perf[cutile-2-2048-2048-2048-True-True-torch.float16]",
    "test_matmul.py::Test_Matmul::test_perf[cutile-True-False-False-False-2048-2048-2048-0-0-torch.float16]",
    "test_matmul.py::Test_Matmul::test_perf_llm[cutile-True-True-gpt3-40b-4096-8192-2728-0-0-torch.float16]",
    "test_silu_and_mul.py::Test_SiLUAndMul::test_perf[pytorch-64-1024-8192-torch.float32]",
    "test_rms_norm.py::Test_RMSNorm::test_perf[triton-static_persistent-262144-1024-torch.float16]",
    "test_layer_norm_legacy.py::Test_LayerNorm::test_perf[cutile-n=4096-n=32-torch.float16]",
    "test_mla_decoding.py::Test_MLADecoding::test_perf[cutile-1024-1-512-64-float16-16-True]",
    "test_attention_sink.py::Test_AttentionSink::test_perf[cutile-torch.bfloat16-1-128-2048-8-8-64-None]",
]
H200 = Assumptions(frozenset({"cutile", "triton", "pytorch"}))  # no cargo, nvcc 13.0 (contract §8)


@needs_tilegym
def test_static_ids_match_the_h200_collection_record() -> None:
    total = 0
    all_ids: set[str] = set()
    for path in sorted((TILEGYM / "tests" / "ops").rglob("test_*.py")):
        module = load_test_module(path, TILEGYM)
        for fn in module.functions:
            ids = module.derive_nodeids(fn, H200) if "test_perf" in fn.name else []
            total += len(ids)
            all_ids.update(i.split("tests/ops/", 1)[1] for i in ids)
            key = (path.name, fn.qualname)
            if key in H200_COUNTS:
                assert len(ids) == H200_COUNTS[key], key
    assert total == 1185  # "collects 1185 of 1918 items" with -k test_perf (contract §8)
    for example in H200_EXAMPLES:
        assert example in all_ids, example


def _contract_analysis() -> dict:
    return json.loads(CONTRACT_EXAMPLE.read_text())


def test_the_kept_example_is_the_contract_docs() -> None:
    """Where the shared doc is at hand (../shared from a checkout), the kept copy still equals it."""
    doc = REPO.parent / "shared/docs/tilegym-contract.md"
    if not doc.is_file():
        pytest.skip("the shared contract doc is not beside this checkout (the kept copy is used)")
    m = re.search(r"### 2\.2.*?```json\n(.*?)```", doc.read_text(), re.S)
    assert m and json.loads(m.group(1)) == _contract_analysis()


@needs_tilegym
def test_k_builder_selects_what_the_hand_written_commands_select() -> None:
    analysis = _contract_analysis()  # §2.2 bmm example
    module = load_test_module(TILEGYM / "tests/ops/test_bmm.py", TILEGYM)
    fn = module.find("Test_BMM_FWD::test_perf")
    ids = module.derive_nodeids(fn, Assumptions(frozenset({"cutile", "cutile-rs", "pytorch"})))
    sel = build_k_expressions(analysis, "cutile-rs", analysis["reference_backend"])
    cand = simulate_k(ids, sel.candidate[0].expr)
    base = simulate_k(ids, sel.baseline[0].expr)
    # §3.4: "Prefer full parameter substrings, e.g. "cutile_rs and 2-2048-2048-2048-False-False""
    hand_cand = simulate_k(ids, "cutile_rs and 2-2048-2048-2048-False-False") + simulate_k(
        ids, "cutile_rs and 8-4096-4096-4096-False-False"
    )
    hand_base = simulate_k(ids, "cutile and not cutile_rs and 2-2048-2048-2048-False-False") + simulate_k(
        ids, "cutile and not cutile_rs and 8-4096-4096-4096-False-False"
    )
    assert cand == hand_cand and len(cand) == 2
    assert base == hand_base and len(base) == 2
    assert compare_selections(cand, base).ok
    # A's recorded k_filter is broader than its own shapes list (6 configs, not 2): worth a note
    assert len(simulate_k(ids, analysis["test_perf_configs"]["static_persistent"]["k_filter"])) == 6
    # the trap: plain "cutile" also selects every cutile_rs case
    assert len(simulate_k(ids, "cutile and False-False")) == 12


@needs_tilegym
def test_false_false_trap_on_matmul() -> None:
    module = load_test_module(TILEGYM / "tests/ops/test_matmul.py", TILEGYM)
    ids = module.derive_nodeids(module.find("Test_Matmul::test_perf"), Assumptions())
    naive = simulate_k(ids, "cutile_rs and False-False")
    # order after backend: use_tma-static_persistent-transpose_b-transpose_a-... (§3.4)
    assert any(re.search(r"\[cutile_rs-True-False-False-True-", n) for n in naive)
    wanted = "True-False-False-False-2048-2048-2048-0-0-torch.float16"
    sel = build_k_expressions({"test_perf_configs": [{"param_list": [wanted]}]}, "cutile-rs", "cutile")
    assert simulate_k(ids, sel.candidate[0].expr) == [
        f"tests/ops/test_matmul.py::Test_Matmul::test_perf[cutile_rs-{wanted}]"
    ]


# ----------------------------------------------------------------------------- CLI


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cutile_workbench", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_cli_kselect_show_collects_both_sides(tmp_path: Path) -> None:
    root = fake.make_tree(tmp_path / "tg", tests={"test_matmul.py": fake.TEST_MATMUL})
    params = [
        "True-False-False-False-2048-2048-2048-torch.float16",
        "True-True-False-True-4096-4096-4096-torch.float16",
    ]
    analysis = tmp_path / "analysis.json"
    analysis.write_text(
        json.dumps({"reference_backend": "cutile", "test_perf_configs": [{"param_list": params}]})
    )
    proc = _cli(
        "kselect", "matmul", "--tilegym", str(root), "--analysis", str(analysis), "--show", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "matched configs: 2" in proc.stdout
    shown = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith("tests/ops/")]
    assert sorted(shown) == sorted(
        f"tests/ops/test_matmul.py::Test_Matmul::test_perf[{tok}-{p}]"
        for tok in ("cutile_rs", "cutile")
        for p in params
    )
    # a baseline backend the test does not parametrize selects nothing: the run is refused
    refused = _cli(
        "kselect",
        "matmul",
        "--tilegym",
        str(root),
        "--analysis",
        str(analysis),
        "--show",
        "--baseline",
        "triton",
        cwd=tmp_path,
    )
    assert refused.returncode == 3 and "REFUSED" in refused.stdout and "candidate only" in refused.stdout


def test_cli_kselect_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "analysis.json"
    bad.write_text('{"test_perf_configs": {"g": {"shapes": [1]}}}')
    proc = _cli("kselect", "bmm", "--analysis", str(bad), "--baseline", "cutile", cwd=tmp_path)
    assert proc.returncode == 2 and "test_perf_configs.g.shapes[0]" in proc.stderr
    bad.write_text("{not json")
    proc = _cli("kselect", "bmm", "--analysis", str(bad), "--baseline", "cutile", cwd=tmp_path)
    assert proc.returncode == 2 and "analysis.json:1" in proc.stderr
    proc = _cli("kselect", "bmm", "--analysis", str(tmp_path / "none.json"), cwd=tmp_path)
    assert proc.returncode == 2 and "not found" in proc.stderr


@needs_tilegym
def test_cli_kselect_static_on_real_tilegym(tmp_path: Path) -> None:
    analysis = tmp_path / "analysis.json"
    analysis.write_text(json.dumps(_contract_analysis()))
    proc = _cli(
        "kselect", "bmm", "--tilegym", str(TILEGYM), "--analysis", str(analysis), "--static", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "matched configs: 2" in proc.stdout
    assert "k_filter 'cutile and not cutile_rs and False-False' selects 6 node ids (6 configs)" in proc.stdout
    assert (
        "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf[cutile_rs-8-4096-4096-4096-False-False-torch.float16]"
        in proc.stdout
    )
