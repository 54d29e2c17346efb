"""IR loading guards, variant pairing and canonicalization (cutile_workbench.ir.loader / canon).

Bad-IR cases are synthetic (written here); the canonicalization pair is the same synthetic
softmax kernel printed in the C++ (tileirdisasm) and Rust printer spellings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cutile_workbench.artifacts.layout import KernelPaths
from cutile_workbench.errors import InputError
from cutile_workbench.ir.canon import canonicalize, strip_loc
from cutile_workbench.ir.loader import (
    MAX_IR_BYTES,
    check_balanced,
    discover_ir,
    load_ir,
    load_pair,
    read_ir_text,
)

FIX = Path(__file__).parent.parent / "fixtures" / "ir"
GOOD = (FIX / "rms_norm_ref_16x1024.mlir").read_text()


def _err(path: Path) -> InputError:
    with pytest.raises(InputError) as ei:
        load_ir(path)
    assert str(path) in str(ei.value)  # every error names the file
    return ei.value


def test_truncated_ir_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "reference.mlir"
    p.write_text("\n".join(GOOD.splitlines()[:12]) + "\n")  # cut inside the for body
    e = _err(p)
    assert "truncated" in e.message and e.line == 12
    assert "opened at line 9" in e.message


def test_binary_bytecode_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "generated_canon.mlir"
    p.write_bytes(b"entry @k() {\n\x7fTileIR\x00\x01\x02\n}\n")
    e = _err(p)
    assert "binary" in e.message and e.line == 2


def test_empty_and_blank(tmp_path: Path) -> None:
    for content in ("", "\n\n   \n"):
        p = tmp_path / "reference.mlir"
        p.write_text(content)
        assert "empty" in _err(p).message


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    p = tmp_path / "reference.mlir"
    p.write_bytes(GOOD.encode()[:200] + b"\n\xff\xfe bad\n" + b"}\n")
    e = _err(p)
    assert "UTF-8" in e.message and e.line == GOOD.encode()[:200].count(b"\n") + 2


def test_50_mb_single_line_is_refused_unread(tmp_path: Path) -> None:
    p = tmp_path / "reference.mlir"
    with open(p, "wb") as fh:  # sparse: no 50 MB write on CI
        fh.truncate(50 * 1024 * 1024)
    assert p.stat().st_size > MAX_IR_BYTES
    e = _err(p)
    assert "MiB" in e.message


def test_long_line_under_size_limit_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "reference.mlir"
    p.write_text("entry @k() {\n  %x = op " + "a" * 1_100_000 + "\n}\n")
    e = _err(p)
    assert e.line == 2 and "characters long" in e.message


def test_not_ir_and_missing(tmp_path: Path) -> None:
    p = tmp_path / "reference.mlir"
    p.write_text("hello world\n")
    assert "entry" in _err(p).message
    assert "not found" in _err(tmp_path / "nope.mlir").message


def test_stray_closing_brace(tmp_path: Path) -> None:
    with pytest.raises(InputError) as ei:
        check_balanced("entry @k() {\n}\n}\n", "x.mlir")
    assert ei.value.line == 3


def test_raw_dump_without_module_wrapper_loads() -> None:
    f = load_ir(FIX / "rms_norm_ref_16x1024.mlir")
    assert "cuda_tile.module" not in f.text
    assert f.canon.lines[0].startswith("entry @ENTRY(%v0: tile<ptr<f16>>")


def test_cpp_and_rust_printer_spellings_canonicalize_identically() -> None:
    a = load_ir(FIX / "synthetic_softmax_cpp.mlir")
    b = load_ir(FIX / "synthetic_softmax_rust.mlir")
    assert a.canon.lines == b.canon.lines
    # attributes are kept
    text = a.canon.text
    for attr in (
        "latency = 10",
        "flush_to_zero",
        "rounding<approx>",
        "identities=[0xFF800000 : f32]",
        "padding_value = neg_inf",
        "strides=[?,1]",
        "occupancy = 2",
    ):
        assert attr in text
    assert "loc(" not in text and "#loc" not in text
    # jump-to map: canonical line -> original line
    idx = next(i for i, ln in enumerate(a.canon.lines) if "load_view_tko" in ln)
    assert "load_view_tko" in a.raw_lines[a.canon.source_lines[idx] - 1]
    assert a.canon.canonical_line_of(a.canon.source_lines[idx]) == idx


def test_ssa_renumbered_by_definition_order() -> None:
    c = canonicalize(
        "entry @f(%arg0: tile<i32>) {\n  %z = addi %arg0, %arg0 : tile<i32>\n"
        "  %a = muli %z, %z : tile<i32>\n  return\n}\n"
    )
    assert c.lines[1] == "  %v1 = addi %v0, %v0 : tile<i32>"
    assert c.lines[2] == "  %v2 = muli %v1, %v1 : tile<i32>"
    assert c.value_names == {"%arg0": "%v0", "%z": "%v1", "%a": "%v2"}


def test_strip_loc_balanced() -> None:
    assert strip_loc('%x = op %a loc(fused["a.py":1:2, callsite(x)])') == "%x = op %a"
    assert strip_loc("%x = alloc(3)") == "%x = alloc(3)"


def _kernel(tmp_path: Path, ref: list[str], gen: list[str]) -> KernelPaths:
    paths = KernelPaths.under(tmp_path, "k")
    paths.reference_dir.mkdir(parents=True)
    paths.generated_dir.mkdir(parents=True)
    (paths.reference_dir / "supplements").mkdir()
    (paths.reference_dir / "supplements" / "reference_a_bf16.mlir").write_text(GOOD)
    for n in ref:
        (paths.reference_dir / n).write_text(GOOD)
    for n in gen:
        (paths.generated_dir / n).write_text(GOOD)
    return paths


def test_variant_pairing_by_name(tmp_path: Path) -> None:
    paths = _kernel(
        tmp_path,
        ["reference_persistent.mlir", "reference_direct.mlir"],
        [
            "generated_persistent_canon.mlir",
            "generated_persistent.mlir",
            "generated_direct.mlir",
            "generated_direct.tileirbc",
        ],
    )
    inv = discover_ir(paths)
    assert [(p.variant, p.reference.name, p.generated.name) for p in inv.pairs] == [
        ("direct", "reference_direct.mlir", "generated_direct.mlir"),
        ("persistent", "reference_persistent.mlir", "generated_persistent_canon.mlir"),
    ]
    assert any("no canonical" in n for n in inv.notes)
    assert inv.pair("persistent") is not None and inv.pair("nope") is None
    assert load_pair(inv.pairs[0]).generated.role == "generated"


def test_single_pairs_with_single_and_unpaired_are_listed(tmp_path: Path) -> None:
    paths = _kernel(tmp_path, ["reference.mlir", "reference_extra.mlir"], ["generated_canon.mlir"])
    inv = discover_ir(paths)
    assert [p.variant for p in inv.pairs] == [None]
    assert [p.name for p in inv.unpaired_reference] == ["reference_extra.mlir"]
    assert inv.pair(None) is inv.pairs[0]


def test_only_file_each_side_pairs_despite_names(tmp_path: Path) -> None:
    paths = _kernel(tmp_path, ["reference.mlir"], ["generated_main_canon.mlir"])
    inv = discover_ir(paths)
    assert len(inv.pairs) == 1 and inv.notes and not inv.unpaired_reference


def test_missing_dirs_give_empty_inventory(tmp_path: Path) -> None:
    inv = discover_ir(KernelPaths.under(tmp_path, "absent"))
    assert inv.pairs == [] and inv.unpaired_generated == []


def test_read_ir_text_accepts_crlf(tmp_path: Path) -> None:
    p = tmp_path / "r.mlir"
    p.write_bytes(GOOD.replace("\n", "\r\n").encode())
    assert read_ir_text(p).count("\r\n") == GOOD.count("\n")
    assert load_ir(p).canon.lines == load_ir(FIX / "rms_norm_ref_16x1024.mlir").canon.lines


def test_one_bracket_scanner_skips_strings_and_stops_at_the_match() -> None:
    """``scan_brackets`` serves both strip_loc (stop at the matching ')') and the brace depth (synthetic lines)."""
    from cutile_workbench.ir.canon import scan_brackets

    line = 'loc("a(b" (x) ) tail'
    assert scan_brackets(line, 3, "(", ")", stop_at_zero=True) == (0, 14)
    assert scan_brackets('f { "}" { \\" }', 0, "{", "}") == (2, 14)  # quoted braces do not count
    assert scan_brackets("loc((unclosed", 3, "(", ")", stop_at_zero=True) == (2, 13)
    assert strip_loc('%y = op loc("we(ird" (1)) %z') == "%y = op %z"
