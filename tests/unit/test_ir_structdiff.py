"""Structural Tile IR diff (cutile_workbench.ir.structdiff) on the recorded real H200 pairs, and through ``diff``.

Real data: the matmul pair of cutile_workbench/profiles/tilegym/session (cuTile ``cuda-tile-opt`` printer vs the
cutile-rs printer). Edge cases (renamed/reordered copies, unknown ops, truncation) are synthetic
edits of those real files, labelled as such.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from cutile_workbench.cli import main
from cutile_workbench.ir.structdiff import structural_diff

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session"
MATMUL = SESSION / "matmul"
REF_SP = (MATMUL / "reference" / "reference_static_persistent.mlir").read_text()
GEN_SP = (MATMUL / "generated" / "generated_static_persistent.mlir").read_text()
REF_NP = (MATMUL / "reference" / "reference_non_persistent.mlir").read_text()


def alpha_copy(text: str) -> str:
    """Synthetic: the same program with every SSA value renamed and the operand-free ops of the
    entry body (``constant``, ``make_token``) moved, in reverse order, to the top of that body."""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"%renamed_{len(names) * 7 % 1000}_{len(names)}")

    lines = text.split("\n")
    entry = next(i for i, ln in enumerate(lines) if "entry @" in ln)
    depth_one = [
        i
        for i, ln in enumerate(lines)
        if i > entry
        and re.match(r"^\s*%\S+ = (constant|make_token)\b", ln)
        and len(ln) - len(ln.lstrip()) == len(lines[entry + 1]) - len(lines[entry + 1].lstrip())
    ]
    moved = [lines[i] for i in reversed(depth_one)]
    rest = [ln for i, ln in enumerate(lines) if i not in set(depth_one)]
    k = next(i for i, ln in enumerate(rest) if "entry @" in ln) + 1
    out = rest[:k] + moved + rest[k:]
    return re.sub(r"%[A-Za-z0-9_$.]+", rename, "\n".join(out))


@pytest.mark.parametrize(
    "text", [REF_SP, GEN_SP, REF_NP], ids=["cuTile-printer", "cutile-rs-printer", "cuTile-np"]
)
def test_alpha_equivalent_programs_diff_as_equivalent(text: str) -> None:
    copy = alpha_copy(text)
    assert copy != text
    d = structural_diff(text, copy)
    assert d.verdict == "equivalent" and d.equivalent
    assert d.changed_rows == 0 and d.hunks == [] and d.fallback == []


def test_static_persistent_tile_and_num_cta_are_the_first_hunks_each_on_one_row() -> None:
    d = structural_diff(REF_SP, GEN_SP)
    assert d.verdict == "different"
    first = d.hunks[0]
    assert first.category.rank == 0 and first.audit_check == "num_cta" and first.end - first.start == 1
    row = d.rows[first.start]
    assert row.kind == "replace" and "num_cta_in_cga = 1" in row.left and "num_cta_in_cga = 4" in row.right
    tile_hunks = [h for h in d.hunks if h.category.name == "tile/CTA shape"]
    assert d.hunks[: len(tile_hunks)] == tile_hunks  # all tile/CTA hunks come first
    pv = [d.rows[h.start] for h in tile_hunks if d.rows[h.start].op == "make_partition_view"]
    assert {
        (r.left.split("tile=(")[1].split(")")[0], r.right.split("tile=(")[1].split(")")[0]) for r in pv
    } == {("64x128", "64x512"), ("128x128", "128x512")}
    assert all(r.kind == "replace" for r in pv)  # one aligned row each
    mma = next(d.rows[h.start] for h in tile_hunks if d.rows[h.start].op == "mmaf")
    assert "tile<128x128xf32>" in mma.left and "tile<128x512xf32>" in mma.right
    # cosmetic hunks (assume chains, re-materialized constants) rank last
    ranks = [h.category.rank for h in d.hunks]
    assert ranks == sorted(ranks) and d.hunks[-1].cosmetic


def test_unknown_op_falls_back_to_text_and_is_never_equivalent() -> None:
    bad = REF_SP.replace("%4 = muli %1, %2 : tile<i32>", "%4 = frobnicate %1, %2 : tile<i32>")
    line = bad.split("\n").index(next(ln for ln in bad.split("\n") if "frobnicate" in ln)) + 1
    d = structural_diff(bad, bad)  # identical text, but one op the diff cannot read
    assert d.verdict == "not fully parsed" and not d.equivalent and d.changed_rows == 0
    assert [(f.side, f.line) for f in d.fallback] == [("reference", line), ("generated", line)]
    assert "unknown op 'frobnicate'" in d.fallback[0].reason
    assert any(f"line(s) {line}" in n for n in d.notes)


def test_generic_form_truncated_and_other_kernel_inputs_never_crash() -> None:
    generic = GEN_SP.replace(
        "%69 = muli %60, %64 : tile<i32>", '%69 = "cuda_tile.muli"(%60, %64) : tile<i32>'
    )
    d = structural_diff(REF_SP, generic)
    assert d.verdict == "not fully parsed" and "another dialect version" in d.fallback[0].reason
    truncated = "\n".join(GEN_SP.split("\n")[:60])
    d = structural_diff(REF_SP, truncated)
    assert d.verdict == "not fully parsed" and any("never closed" in f.reason for f in d.fallback)
    rms = (ROOT / "cutile_workbench/profiles/rms_norm/session/rms_norm/reference/reference.mlir").read_text()
    d = structural_diff(REF_SP, rms)
    assert d.verdict == "different" and any("another kernel" in n for n in d.notes)
    for junk in ("", "}", "{\n{", "(%a: tile<f32>) {", "%x = \n", "entry @k() {\n(%a) {\n} else {"):
        assert structural_diff(junk, REF_SP).verdict != "equivalent"


def _kernel(tmp_path: Path, pairs: dict[str, tuple[str, str]]) -> Path:
    root = tmp_path / "out"
    k = root / "matmul"
    (k / "reference").mkdir(parents=True)
    (k / "generated").mkdir(parents=True)
    for v, (ref, gen) in pairs.items():
        (k / "reference" / f"reference_{v}.mlir").write_text(ref)
        (k / "generated" / f"generated_{v}_canon.mlir").write_text(gen)
    return root


def test_cli_json_says_equivalent_for_alpha_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _kernel(tmp_path, {"static_persistent": (REF_SP, alpha_copy(REF_SP))})
    assert main(["diff", "matmul", "--out-root", str(root), "--variant", "static_persistent", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "equivalent" and doc["equivalent"] is True
    assert doc["stats"]["replace"] + doc["stats"]["insert"] + doc["stats"]["delete"] == 0
    assert main(["diff", "matmul", "--out-root", str(root), "--variant", "static_persistent"]) == 0
    assert "structural diff: equivalent" in capsys.readouterr().out


def test_cli_without_variant_shows_every_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    root = tmp_path / "out"
    shutil.copytree(MATMUL / "reference", root / "matmul" / "reference")
    shutil.copytree(MATMUL / "generated", root / "matmul" / "generated")
    assert main(["diff", "matmul", "--out-root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "══ non_persistent ══" in out and "══ static_persistent ══" in out
    sp = out.split("══ static_persistent ══")[1]
    first = sp.split("── hunk 1/")[1].split("── hunk 2/")[0]
    assert "tile/CTA shape · audit row: num_cta" in first and "num_cta_in_cga = 4" in first
    assert "cosmetic hunk(s) folded" in sp
    assert "diff_ir.sh-parity audit (TileGym's script, byte-for-byte):" in sp
    # the side-by-side fits the terminal (the audit's own lines are the script's, unchanged)
    assert all(
        len(ln) <= 120
        for ln in out.splitlines()
        if not ln.startswith(("  CRITICAL", "  WARN", "reference:", "generated:", "note:"))
    )


def test_config_pairs_carry_the_launch_evidence_of_that_config() -> None:
    """Real session: the IR each matmul config ran, tied to that config's recorded launches."""
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.services.ir_diff import diff_configs

    ws = open_workspace("matmul", out_root=None, tilegym=None, strict=False)
    configs, problems = diff_configs(ws)
    assert problems == []
    sp = next(c for c in configs if c.params == "True-True-False-False-4096-4096-4096-0-0-torch.float16")
    ev = sp.diff.launch_evidence
    assert len(ev) == 2 and ev[0].startswith("reference (cutile): grid 132x1x1") and "smem 196760 B" in ev[0]
    assert ev[1].startswith("candidate (cutile_rs): grid 132x1x1") and "smem 229600 B" in ev[1]
    first = sp.diff.struct.hunks[0]
    assert first.category.rank == 0 and sp.diff.audit_row_of(first.audit_check) == "num_cta"


def test_truncated_generated_file_is_diffed_with_a_labelled_text_fallback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Synthetic edit of the real pair: the generated file cut inside the entry body (a dump that
    stopped early). The pair is shown (exit 0), never refused and never called equivalent; the lines
    the parser could not read are named and text-diffed under their own label."""
    lines = GEN_SP.split("\n")
    cut = next(i for i, ln in enumerate(lines) if "mmaf" in ln) + 1  # keep up to the mma
    truncated = "\n".join([*lines[: cut - 1], lines[cut - 1][:40]])  # last line cut mid-op
    root = _kernel(tmp_path, {"static_persistent": (REF_SP, truncated)})
    args = ["diff", "matmul", "--out-root", str(root), "--variant", "static_persistent"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "structural diff: not fully parsed" in out and "equivalent" not in out.split("\n")[2]
    assert "truncated" in out and f"L{cut}" in out
    assert "the generated text is truncated" in out  # reference rows past the cut: text, not differences
    assert "text diff of the lines not parsed" in out
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "not fully parsed" and doc["equivalent"] is False
    assert any(f["side"] == "generated" and f["line"] == cut for f in doc["fallback"])
    assert any("generated_static_persistent_canon.mlir" in n and "truncated" in n for n in doc["notes"])
    assert doc["fallback_diff"] and all(
        set(r) >= {"kind", "left_no", "right_no", "left", "right"} for r in doc["fallback_diff"]
    )


def test_the_same_truncated_text_on_both_sides_is_not_equivalent() -> None:
    truncated = "\n".join(REF_SP.split("\n")[:40])
    d = structural_diff(truncated, truncated)
    assert d.verdict == "not fully parsed" and not d.equivalent
    assert d.fallback_rows()  # the unread part, text-diffed (here: equal lines, still not parsed)


def test_service_keeps_a_truncated_pair_and_reports_the_file(tmp_path: Path) -> None:
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.services.ir_diff import diff_all

    truncated = "\n".join(GEN_SP.split("\n")[:60])
    root = _kernel(tmp_path, {"static_persistent": (REF_SP, truncated), "non_persistent": (REF_NP, REF_NP)})
    ws = open_workspace("matmul", out_root=root, tilegym=None, strict=False)
    diffs, problems = diff_all(ws)
    assert sorted(d.label for d in diffs) == ["non_persistent", "static_persistent"]
    sp = next(d for d in diffs if d.label == "static_persistent")
    assert sp.struct.verdict == "not fully parsed"
    assert len(problems) == 1 and problems[0].path is not None
    assert problems[0].path.name == "generated_static_persistent_canon.mlir" and "truncated" in str(
        problems[0]
    )


def test_diff_without_variant_puts_the_slowest_variant_of_e_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded real matmul session: E's table has static_persistent at 1.895x (geomean) and
    non_persistent at 1.00x, so static_persistent's pair comes first; --slowest shows only it."""
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["diff", "matmul"]) == 0
    out = capsys.readouterr().out
    assert out.index("══ static_persistent ══") < out.index("══ non_persistent ══")
    assert (
        "ordered by E's table (slowest variant first): static_persistent 1.895x, non_persistent 0.999x" in out
    )
    assert main(["diff", "matmul", "--slowest", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["variant"] == "static_persistent"
    assert any("slowest variant in E's table: static_persistent (geomean 1.895x" in n for n in doc["notes"])


def test_slowest_without_e_table_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _kernel(tmp_path, {"static_persistent": (REF_SP, GEN_SP), "non_persistent": (REF_NP, REF_NP)})
    assert main(["diff", "matmul", "--out-root", str(root), "--slowest"]) == 2
    assert "--slowest" in capsys.readouterr().err


def test_a_literal_percent_with_the_template_of_an_op_line_does_not_crash() -> None:
    """Found by the ir_structdiff fuzz target (seed 27882444, number_swap+splice_self on the real
    generated matmul file): ``addi %, %`` has the text-without-values of ``addi %1, %2`` but no
    values, and the per-template parse cache gave it the other line's operand positions."""
    for first, second in (
        ("%3 = addi %1, %2 : tile<i32>", "%4 = addi %, % : tile<i32>"),
        ("%4 = addi %, % : tile<i32>", "%3 = addi %1, %2 : tile<i32>"),
    ):
        text = "entry @k(%1: tile<i32>, %2: tile<i32>) {\n  " + first + "\n  " + second + "\n  return\n}\n"
        d = structural_diff(text, text)
        assert d.verdict != "different" and d.changed_rows == 0
