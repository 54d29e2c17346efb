"""diff_ir.sh parity of cutile_workbench.ir.audit: same stdout, verdict, counts and exit code as the real
script (run when the TileGym snapshot is present), plus jump-to line numbers and row order.

Fixtures: tests/fixtures/ir/README.md (real abridged H200 excerpt, synthetic-derived config change,
synthetic edge cases). The mutation cases are synthetic: seeded line edits of those fixtures.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from cutile_workbench.ir.audit import audit_files, audit_texts, grep_lines, render_diff_ir_text

FIX = Path(__file__).parent.parent / "fixtures" / "ir"
SCRIPT = (
    Path(__file__).resolve().parents[2]
    / ".fetched"
    / "TileGym"
    / "skills"
    / "tilegym-converting-cutile-triton-to-cutile-rs"
    / "scripts"
    / "diff_ir.sh"
)
needs_script = pytest.mark.skipif(
    not SCRIPT.is_file() or shutil.which("bash") is None, reason="TileGym snapshot (diff_ir.sh) not present"
)

PAIRS = [
    ("rms_norm_ref_16x1024.mlir", "rms_norm_ref_4x8192.mlir"),
    ("synthetic_gemm_ref.mlir", "synthetic_gemm_gen.mlir"),
    ("synthetic_gemm_gen.mlir", "synthetic_gemm_ref.mlir"),
    ("synthetic_softmax_cpp.mlir", "synthetic_softmax_rust.mlir"),
    ("synthetic_gemm_ref.mlir", "synthetic_gemm_ref.mlir"),
    ("rms_norm_ref_4x8192.mlir", "synthetic_softmax_rust.mlir"),
]


def run_script(ref: Path, gen: Path) -> tuple[str, int]:
    env = dict(os.environ, LC_ALL="C")
    p = subprocess.run(
        ["bash", str(SCRIPT), str(ref), str(gen)], capture_output=True, env=env, check=False, timeout=60
    )
    return p.stdout.decode("utf-8", "surrogateescape"), p.returncode


@needs_script
@pytest.mark.parametrize(("ref", "gen"), PAIRS)
def test_byte_identical_to_real_diff_ir_sh(ref: str, gen: str) -> None:
    out, rc = run_script(FIX / ref, FIX / gen)
    audit = audit_files(FIX / ref, FIX / gen)
    assert render_diff_ir_text(audit) == out
    assert audit.exit_code == rc
    assert audit.verdict_line == next(ln for ln in out.splitlines() if ln.startswith("VERDICT: "))


def _mutate(lines: list[str], rnd: random.Random) -> list[str]:
    out = list(lines)
    for _ in range(rnd.randint(1, 6)):
        k = rnd.randrange(len(out)) if out else 0
        op = rnd.random()
        if op < 0.25 and out:
            del out[k]
        elif op < 0.5:
            out.insert(k, rnd.choice(lines))
        elif op < 0.7 and out:
            out[k] = (
                out[k].replace("f32", "f16").replace("true", "false").replace("latency = 10", "latency = 3")
            )
        elif op < 0.85 and out:
            out[k] = out[k].replace("flush_to_zero", "").replace("occupancy = 1", "occupancy = 4")
        else:
            out.insert(
                k,
                rnd.choice(
                    [
                        "  %x = addf %a, %b : tile<16x1024xf32>",
                        "  %y = exp %a : tile<8xf32>",
                        "  %z = assume div_by<16>, %p : tile<i64>",
                        "  reduce %a dim=0 identities=[1.0 : f32] : tile<4xf32>",
                        "  %m = mma %a, %b, %c : tile<64x16xbf16>, tile<16x64xbf16>, tile<64x64xf32>",
                        "  %q = remi %blockId_x, %c : tile<i32>",
                        "\tfor %i in (%a to %b, step %c) : tile<i32> {",
                        "  %w = load_ptr_tko weak %p token = %0 : tile<ptr<f16>> -> tile<16xf16>, token",
                    ]
                ),
            )
    return out


@needs_script
def test_parity_on_seeded_mutations(tmp_path: Path) -> None:
    """Synthetic: 10 seeded mutation pairs of the fixtures; every verdict/count/byte must agree."""
    sources = [grep_lines((FIX / n).read_text()) for n in sorted({p for pair in PAIRS for p in pair})]
    rnd = random.Random(20261129)
    for case in range(10):
        a = _mutate(rnd.choice(sources), rnd)
        b = _mutate(rnd.choice(sources), rnd)
        ra, rb = tmp_path / f"r{case}.mlir", tmp_path / f"g{case}.mlir"
        ra.write_text("\n".join(a) + ("\n" if case % 3 else ""))  # some files lack the final newline
        eol = "\r\n" if case % 4 == 0 else "\n"  # CRLF files: grep keeps the \r in each line
        rb.write_bytes((eol.join(b) + eol).encode())
        out, rc = run_script(ra, rb)
        audit = audit_texts(ra.read_bytes().decode(), rb.read_bytes().decode())
        assert audit.stdout == out, f"case {case}"
        assert audit.exit_code == rc, f"case {case}"


def test_tile_shape_difference_is_critical_with_jump_lines() -> None:
    audit = audit_files(FIX / "rms_norm_ref_16x1024.mlir", FIX / "rms_norm_ref_4x8192.mlir")
    assert audit.verdict == "FAIL_FIXABLE" and audit.exit_code == 1
    assert "CRITICAL: tile shape set differs" in audit.notes
    first = audit.rows[0]
    assert first.severity == "CRITICAL"
    tile = next(r for r in audit.rows if r.check == "tile_shapes")
    # line 10 is the make_partition_view with tile=(16x1024) / tile=(4x8192): a jump target
    assert 10 in tile.ref_lines and 10 in tile.gen_lines
    assert "partition_view<tile=(16x1024)" in grep_lines((FIX / "rms_norm_ref_16x1024.mlir").read_text())[9]
    sev = [r.severity for r in audit.rows]
    assert sev == sorted(sev, key=["CRITICAL", "WARN", "INFO", "OK"].index)


def test_gemm_checks_each_flag_the_right_lines() -> None:
    audit = audit_files(FIX / "synthetic_gemm_ref.mlir", FIX / "synthetic_gemm_gen.mlir")
    by = {r.check: r for r in audit.rows}
    assert (
        by["num_cta"].severity == "CRITICAL"
        and by["num_cta"].ref_value == "2"
        and by["num_cta"].gen_value == "1"
    )
    assert by["mma_acc"].ref_value == "tile<128x128xf32>" and by["mma_acc"].gen_value == "tile<128x128xf16>"
    assert by["assume_scalar"].gen_lines == (8,)
    assert by["ftz:exp2"].severity == "CRITICAL" and by["ftz:exp2"].ref_lines == (24,)
    assert by["allow_tma_true"].severity == "CRITICAL"
    assert by["allow_tma_false"].severity == "WARN"
    assert by["swizzle"].severity == "WARN"
    assert by["addf"].severity == "WARN"  # WORKAROUND(+1)
    assert audit.critical_count == 13 and audit.workaround_count == 1


def test_identical_pair_passes() -> None:
    text = (FIX / "synthetic_softmax_cpp.mlir").read_text()
    audit = audit_texts(text, text)
    assert audit.verdict == "PASS" and audit.exit_code == 0 and audit.notes == []
    assert audit.stdout.endswith("VERDICT: PASS\n")


def test_workaround_only_gives_pass_with_notes() -> None:
    ref = "entry @k() {\n  %a = addf %x, %y : tile<4xf32>\n}\n"
    gen = "entry @k() {\n  %a = addf %x, %y : tile<4xf32>\n  %b = addf %a, %y : tile<4xf32>\n}\n"
    audit = audit_texts(ref, gen)
    assert audit.verdict == "PASS_WITH_NOTES" and audit.exit_code == 2
    assert audit.verdict_line == "VERDICT: PASS_WITH_NOTES (1 workaround op(s), 0 note(s))"
    assert audit.stdout.endswith("note(s))\n")  # no notes block when there are no notes


def test_key_lines_are_the_differing_rows_and_verdict() -> None:
    audit = audit_files(FIX / "synthetic_gemm_ref.mlir", FIX / "synthetic_gemm_gen.mlir")
    keys = audit.key_lines()
    assert any(k.startswith("load_ptr_tko") and "CRITICAL_DIFF" in k for k in keys)
    assert not any(k.rstrip().endswith("MATCH") for k in keys)
    assert "VERDICT: FAIL_FIXABLE (13 critical diff(s))" in keys


# --------------------------------------------------------------------------- recorded H200 dumps

SESSIONS = [
    Path(__file__).resolve().parents[2] / "cutile_workbench" / "profiles" / p / "session" / k
    for p, k in (("rms_norm", "rms_norm"), ("rms_norm", "rms_norm_hotpath"), ("softmax", "softmax"))
]


def _real_pair(d: Path) -> tuple[Path, Path]:
    ref, gen = d / "reference" / "reference.mlir", d / "generated" / "generated_canon.mlir"
    if not (ref.is_file() and gen.is_file()):
        pytest.skip(f"recorded dumps not present in {d}")
    return ref, gen


@needs_script
@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.name)
def test_parity_on_recorded_h200_dumps(session: Path) -> None:
    ref, gen = _real_pair(session)
    out, rc = run_script(ref, gen)
    audit = audit_files(ref, gen)
    assert audit.stdout == out and audit.exit_code == rc


def test_recorded_rms_norm_tile_change_is_critical_at_partition_views() -> None:
    """REAL: TileGym-style cuTile rms_norm dumped on the H200 at tile 16x1024 vs 4x8192."""
    ref, gen = _real_pair(SESSIONS[0])
    audit = audit_files(ref, gen)
    tile = next(r for r in audit.rows if r.check == "tile_shapes")
    assert tile.severity == "CRITICAL" and audit.rows[0].severity == "CRITICAL"
    pv = [i for i, ln in enumerate(grep_lines(ref.read_text()), 1) if "make_partition_view" in ln]
    assert pv and set(pv) <= set(tile.ref_lines) and set(pv) <= set(tile.gen_lines)
