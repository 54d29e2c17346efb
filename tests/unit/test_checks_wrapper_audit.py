"""Static audit of cutile-rs wrappers: synthetic wrappers (each a labelled SYNTHETIC defect) and
every real wrapper of the fetched TileGym snapshot (skipped when absent)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cutile_workbench.checks.wrapper_audit import RULES, audit_wrapper
from cutile_workbench.errors import InputError
from cutile_workbench.model import Finding

REPO = Path(__file__).resolve().parents[2]
TILEGYM = REPO / ".fetched" / "TileGym"
needs_tilegym = pytest.mark.skipif(not (TILEGYM / "src").is_dir(), reason="TileGym snapshot not fetched")

HEADER = '''\
from types import SimpleNamespace

import torch

from tilegym.backend import register_impl
from tilegym.backend.cutile_rs.autotuner import autotune_launch
from tilegym.backend.cutile_rs.utils import bind_kernel_function_cffi, check_rc, make_tensor_desc

_KERNEL = "toy"
_FFI_CDEF = """
int32_t cutile_toy(const TensorDesc* out, const TensorDesc* x,
    int32_t block, int32_t num_cta_in_cga, int32_t occupancy, uint64_t raw_stream);
"""
_AUTO_COMPILE_OPTION = -1


def _configs():
    return [SimpleNamespace(BLOCK=128, NUM_CTA_IN_CGA=2, OCCUPANCY=1), SimpleNamespace(BLOCK=256, NUM_CTA_IN_CGA=4, OCCUPANCY=2)]


def _run_ffi(out, x, cfg):
    ffi, lib = bind_kernel_function_cffi(_KERNEL, _FFI_CDEF)
    rc = lib.cutile_toy(
        make_tensor_desc(ffi, out),
        make_tensor_desc(ffi, x),
        int(cfg.BLOCK),
        int(cfg.NUM_CTA_IN_CGA),
        int(cfg.OCCUPANCY),
        int(torch.cuda.current_stream().cuda_stream),
    )
    check_rc(rc, "cutile_toy")
    return out
'''

CLEAN = (
    HEADER
    + """

@register_impl("toy", backend="cutile-rs")
def toy(x, **kwargs):
    if x.requires_grad:
        x = x.detach()
    n = int(x.shape[0])

    def kernel_fn(cfg):
        out = torch.empty_like(x)
        _run_ffi(out, x, cfg)
        return out

    return autotune_launch(kernel_fn=kernel_fn, configs=_configs(), key=(n, x.dtype), kernel_name=_KERNEL).output
"""
)

# SYNTHETIC defect: a fixed-config canary before autotune_launch on every call (contract §7.2)
CANARY = (
    HEADER
    + """

_CANARY = SimpleNamespace(BLOCK=128, NUM_CTA_IN_CGA=1, OCCUPANCY=1)


@register_impl("toy", backend="cutile-rs")
def toy(x, **kwargs):
    if x.requires_grad:
        x = x.detach()
    n = int(x.shape[0])
    _run_ffi(torch.empty_like(x), x, _CANARY)

    def kernel_fn(cfg):
        out = torch.empty_like(x)
        _run_ffi(out, x, cfg)
        return out

    return autotune_launch(kernel_fn=kernel_fn, configs=_configs(), key=(n, x.dtype), kernel_name=_KERNEL).output
"""
)

# SYNTHETIC defect: torch.zeros + .clone() + expand().contiguous() inside kernel_fn(cfg)
ZEROS = (
    HEADER
    + """

@register_impl("toy", backend="cutile-rs")
def toy(x, **kwargs):
    if x.requires_grad:
        x = x.detach()
    n = int(x.shape[0])

    def kernel_fn(cfg):
        out = torch.zeros((n,), device=x.device, dtype=x.dtype)
        xin = x.clone()
        bias = x[:1].expand(n).contiguous()
        _run_ffi(out, xin + bias, cfg)
        return out

    return autotune_launch(kernel_fn=kernel_fn, configs=_configs(), key=(n, x.dtype), kernel_name=_KERNEL).output
"""
)

# SYNTHETIC defects: no autotune, compile options left auto, rejects requires_grad
DIRECT = (
    HEADER.replace(
        "int(cfg.NUM_CTA_IN_CGA),\n        int(cfg.OCCUPANCY),",
        "_AUTO_COMPILE_OPTION,\n        _AUTO_COMPILE_OPTION,",
    )
    + """

@register_impl("toy", backend="cutile-rs")
def toy(x, **kwargs):
    if x.requires_grad:
        raise NotImplementedError("backward not implemented")
    out = torch.empty_like(x)
    return _run_ffi(out, x, SimpleNamespace(BLOCK=128))
"""
)

ANALYSIS = {
    "launch_path": "autotune",
    "autotune_key": ["N", "dtype", "transpose_b"],
    "autotune_configs": [
        {"BLOCK": 128, "num_ctas": 2, "occupancy": 1},
        {"BLOCK": 256, "num_ctas": 4, "occupancy": 2},
    ],
}


def _write(tmp_path: Path, text: str, name: str = "toy.py") -> Path:
    path = tmp_path / "src" / "tilegym" / "ops" / "cutile_rs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def _rules(findings: list[Finding]) -> list[str]:
    return [f.details["rule"] for f in findings]


def _line_of(path: Path, needle: str, nth: int = 1) -> int:
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    return hits[nth - 1]


def test_clean_wrapper_has_no_findings(tmp_path: Path) -> None:
    analysis = dict(ANALYSIS, autotune_key=["N", "dtype"])
    assert audit_wrapper(_write(tmp_path, CLEAN), analysis) == []
    assert audit_wrapper(_write(tmp_path, CLEAN), None) == []


def test_canary_before_autotune_is_flagged_at_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, CANARY)
    findings = [f for f in audit_wrapper(path, None) if f.details["rule"] == "canary_hot_path"]
    assert len(findings) == 1
    f = findings[0]
    line = _line_of(path, "_run_ffi(torch.empty_like(x), x, _CANARY)")
    assert f.evidence == (f"src/tilegym/ops/cutile_rs/toy.py:{line}",)
    assert f.kind == "wrapper" and f.fixable and f.confidence == "high"
    assert f.details["source"] == "references/performance-checklist.md"
    assert "never before every cached launch" in f.details["rule_text"]
    assert f.details["action"]


def test_direct_ffi_canary_in_the_entry_is_flagged(tmp_path: Path) -> None:
    # SYNTHETIC defect: the entry itself calls lib.cutile_toy with a fixed config, then autotunes
    text = CLEAN.replace(
        "    n = int(x.shape[0])\n",
        "    n = int(x.shape[0])\n    ffi, lib = bind_kernel_function_cffi(_KERNEL, _FFI_CDEF)\n"
        "    lib.cutile_toy(make_tensor_desc(ffi, x), make_tensor_desc(ffi, x), 128, -1, -1, 0)\n",
        1,
    )
    path = _write(tmp_path, text)
    findings = [f for f in audit_wrapper(path, None) if f.details["rule"] == "canary_hot_path"]
    assert [f.details["line"] for f in findings] == [
        _line_of(path, "lib.cutile_toy(make_tensor_desc(ffi, x)")
    ]


def test_fills_and_copies_inside_kernel_fn(tmp_path: Path) -> None:
    path = _write(tmp_path, ZEROS)
    findings = audit_wrapper(path, None)
    got = {(f.details["rule"], f.details["line"]) for f in findings}
    assert ("kernel_fn_alloc", _line_of(path, "torch.zeros((n,)")) in got
    assert ("kernel_fn_alloc", _line_of(path, "x.clone()")) in got
    assert ("kernel_fn_alloc", _line_of(path, ".expand(n).contiguous()")) in got
    assert {r for r in _rules(findings)} == {"kernel_fn_alloc"}
    assert any(".expand().contiguous()" in f.summary for f in findings)


def test_direct_wrapper_against_autotuning_reference(tmp_path: Path) -> None:
    path = _write(tmp_path, DIRECT)
    findings = audit_wrapper(path, ANALYSIS)
    rules = _rules(findings)
    assert "autotune_missing" in rules
    assert rules.count("compile_options") == 2  # num_cta_in_cga and occupancy both pinned to auto
    grad = [f for f in findings if f.details["rule"] == "grad_not_detached"]
    assert len(grad) == 1 and grad[0].details["line"] == _line_of(path, "if x.requires_grad:")
    co = [f for f in findings if f.details["rule"] == "compile_options"]
    assert all(f.confidence == "high" for f in co)  # the reference tunes {2,4} and {1,2}


def test_cache_key_missing_fields(tmp_path: Path) -> None:
    path = _write(tmp_path, CLEAN)
    findings = audit_wrapper(path, ANALYSIS)
    assert _rules(findings) == ["cache_key"]
    assert findings[0].details["missing"] == ["transpose_b"]
    assert findings[0].details["line"] == _line_of(path, "key=(n, x.dtype)")


def test_pinned_options_when_reference_is_auto(tmp_path: Path) -> None:
    analysis = {
        "launch_path": "autotune",
        "autotune_configs": [{"BLOCK": 128}],
        "autotune_key": ["N", "dtype"],
    }
    findings = audit_wrapper(_write(tmp_path, CLEAN), analysis)
    assert _rules(findings) == ["compile_options", "compile_options"]
    assert all(f.confidence == "medium" for f in findings)


def test_bad_input_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        audit_wrapper(tmp_path / "missing.py", None)
    assert err.value.exit_code == 2
    broken = _write(tmp_path, CLEAN + "\ndef oops(:\n")
    with pytest.raises(InputError) as err:
        audit_wrapper(broken, None)
    assert err.value.line == len(CLEAN.splitlines()) + 2
    assert "syntax error" in str(err.value)


def test_every_rule_quotes_the_seed() -> None:
    skill = TILEGYM / "skills" / "tilegym-converting-cutile-triton-to-cutile-rs"
    for rule in RULES.values():
        assert rule.text and rule.action
        if not skill.is_dir():
            continue
        source = TILEGYM / rule.source if rule.source.startswith("src/") else skill / rule.source
        assert rule.text in source.read_text(encoding="utf-8"), (rule.id, source)


@needs_tilegym
def test_every_real_wrapper_audits_without_errors() -> None:
    wrappers = sorted((TILEGYM / "src/tilegym/ops/cutile_rs").glob("*.py"))
    assert len(wrappers) >= 6
    for path in wrappers:
        for f in audit_wrapper(path, None):
            assert f.kind == "wrapper"
            file, line = f.evidence[0].rsplit(":", 1)
            assert file == f"src/tilegym/ops/cutile_rs/{path.name}" and int(line) > 0
            assert f.details["rule"] in RULES


@needs_tilegym
def test_real_wrappers_known_findings() -> None:
    ops = TILEGYM / "src/tilegym/ops/cutile_rs"
    # bmm/matmul: autotuned, options forwarded, torch.empty in kernel_fn → nothing structural
    assert audit_wrapper(ops / "matmul.py", None) == []
    bmm_analysis = {  # the autotune fields of the contract's §2.2 bmm analysis.json
        "launch_path": "autotune",
        "autotune_key": ["Q", "M", "N", "K", "transpose_a", "transpose_b", "dtype", "device"],
        "autotune_configs": [
            {"TILE_M": 128, "TILE_N": 256, "TILE_K": 64, "GROUP_SIZE_M": 8, "occupancy": 1, "num_ctas": 2}
        ],
    }
    bmm = audit_wrapper(ops / "bmm.py", bmm_analysis)
    assert [(f.details["rule"], f.details["missing"], f.confidence) for f in bmm] == [
        ("cache_key", ["device"], "low")
    ]
    assert not bmm[0].fixable and bmm[0].details["needs_confirmation"]  # a hypothesis, not a verdict
    # attention_sink: transposes made contiguous on every call, outside kernel_fn
    sink = audit_wrapper(ops / "attention_sink.py", None)
    copies = [f for f in sink if f.details["rule"] == "hot_path_copy"]
    assert len(copies) >= 4 and all("contiguous" in f.summary or "torch.tensor" in f.summary for f in copies)
    # silu_and_mul copies into out= when given
    silu = audit_wrapper(ops / "silu_and_mul.py", None)
    assert [f.details["rule"] for f in silu] == ["hot_path_copy"] and "out.copy_" in silu[0].summary


@needs_tilegym
def test_audit_cli_json() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cutile_workbench",
            "audit-wrapper",
            "silu_and_mul",
            "--tilegym",
            str(TILEGYM),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows[0]["details"]["rule"] == "hot_path_copy"
    bad = subprocess.run(
        [sys.executable, "-m", "cutile_workbench", "audit-wrapper", "nosuchop", "--tilegym", str(TILEGYM)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert bad.returncode == 2 and "unknown kernel 'nosuchop'" in bad.stderr


def test_cache_key_counts_derived_names_and_refused_parameters(tmp_path: Path) -> None:
    """REAL excerpt of TileGym 75a1430's cutile-rs matmul wrapper: its key ``(m, n, k, a.dtype,
    persistent)`` covers ``static_persistent`` (``persistent = 1 if static_persistent else 0``), and
    ``trans_a``/``trans_b`` are refused with NotImplementedError, so they need no key slot."""
    path = Path(__file__).parent.parent / "fixtures" / "f" / "tilegym_75a1430" / "cutile_rs" / "matmul.py"
    analysis = {
        "launch_path": "autotune",
        "autotune_key": ["M", "N", "K", "dtype", "static_persistent", "transpose_a", "transpose_b"],
    }
    assert [f for f in audit_wrapper(path, analysis) if f.details["rule"] == "cache_key"] == []
    # SYNTHETIC counter-check: the same key without `persistent` does lack static_persistent
    copy = _write(
        tmp_path,
        path.read_text().replace("key=(m, n, k, a.dtype, persistent)", "key=(m, n, k, a.dtype)"),
        "matmul.py",
    )
    (f,) = [f for f in audit_wrapper(copy, analysis) if f.details["rule"] == "cache_key"]
    assert f.details["missing"] == ["static_persistent"]
