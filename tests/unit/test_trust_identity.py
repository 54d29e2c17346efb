"""Issue 18 items 1-2: candidate identity per config and the config the reference ran, on REAL captures.

- REAL: profiles/tilegym/session/{matmul,silu_and_mul} (real cutile-rs vs cuTile Python on the H200,
  2026-12-01) and cutile_workbench/profiles/rms_norm/session/rms_norm (real cuTile stand-in vs a real plain-Triton
  baseline); the REAL TileGym 75a1430 wrapper excerpts of tests/fixtures/f/tilegym_75a1430.
- CONSTRUCTED FROM REAL CAPTURES (labelled per test): the candidate given the baseline's own recorded
  launch sets (what a wrapper that delegates to the reference, or a silent fallback, records: the same
  symbol, grid, block, registers and smem) — the perf logs stay the real ones.
- SYNTHETIC (labelled per test): a wrapper line that delegates to the reference; captures stripped of
  symbols or resources; a capture with CUDA events only.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from cutile_workbench.artifacts.launches_io import load_launch_sets, save_launch_sets
from cutile_workbench.cli import main
from cutile_workbench.evidence.candidate_identity import candidate_identities, wrapper_delegations
from cutile_workbench.evidence.reference_config import decode_cutile_symbol, reference_config
from cutile_workbench.evidence.trust import kernel_trust
from cutile_workbench.model import LaunchSet
from cutile_workbench.services import stage_e

HERE = Path(__file__).parent.parent
SESSION = HERE.parent / "cutile_workbench" / "profiles" / "tilegym" / "session"
TG = HERE / "fixtures" / "f" / "tilegym_75a1430"
NP = tuple(f"True-False-False-False-{n}-{n}-{n}-0-0-torch.float16" for n in (2048, 4096, 8192))
SP = tuple(f"True-True-False-False-{n}-{n}-{n}-0-0-torch.float16" for n in (2048, 4096, 8192))
SP_SYMBOL = (
    "_static_persistent_matmul_kernel_Kt1_A2f16_1v8l0_2t1_3i16_p16_A2f16_1v8l0_2t1_3i16_p16_A2f16_1v8l0_2t1_"
    "3i16_p16_Si32_Si32_Si32_I128_I128_I64_B0_B0_I8_I_1"
)


def _tilegym(tmp_path: Path) -> Path:
    tg = tmp_path / "tilegym"
    for side in ("cutile_rs", "cutile"):
        d = tg / "src" / "tilegym" / "ops" / side
        d.mkdir(parents=True)
        shutil.copyfile(TG / side / "matmul.py", d / "matmul.py")
    return tg


def _copy(tmp_path: Path, kernel: str) -> Path:
    root = tmp_path / "out"
    shutil.copytree(SESSION / kernel, root / kernel)
    return root


def _candidate_runs_baseline_captures(kernel_dir: Path, candidate: str = "cutile_rs") -> None:
    """CONSTRUCTED FROM REAL CAPTURES: replace the candidate's recorded launch sets by the baseline's own
    recorded sets (relabelled), as a wrapper delegating to the reference would record them."""
    path = kernel_dir / "workbench" / "launches.json.gz"
    sets = load_launch_sets(path)
    base = [s for s in sets if s.backend != candidate]
    seen: set[str] = set()
    fake: list[LaunchSet] = []
    for s in base:
        if s.params not in seen:  # the forward set of each config (silu_and_mul also records a backward)
            seen.add(s.params)
            fake.append(dataclasses.replace(s, backend=candidate))
    save_launch_sets(path, fake + base)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# --------------------------------------------------------------------------- item 1: identity


@pytest.mark.parametrize("kernel", ["matmul", "silu_and_mul"])
def test_real_cutile_rs_sessions_ran_their_own_kernels(kernel: str) -> None:
    """REAL: every row of the recorded real cutile-rs sessions ran a cutile-rs ``…_entry`` kernel."""
    ws = stage_e.open_kernel(kernel, out_root=SESSION, tilegym=None)
    trust = stage_e.trust(ws, stage_e.ratio_table(ws))
    assert {i.kind for i in trust.identities.values()} == {"candidate"}
    assert all(
        i.candidate is not None and i.candidate.symbol.endswith("_entry") for i in trust.identities.values()
    )
    assert not trust.warning and trust.summary.startswith("candidate identity: all")


def test_candidate_with_the_baselines_symbol_is_the_reference(tmp_path: Path) -> None:
    """CONSTRUCTED FROM REAL CAPTURES: the candidate's symbol equals the baseline's → REF, same launch."""
    root = _copy(tmp_path, "matmul")
    _candidate_runs_baseline_captures(root / "matmul")
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    trust = stage_e.trust(ws, stage_e.ratio_table(ws))
    assert set(trust.identities) == set(NP + SP)
    for ident in trust.identities.values():
        assert ident.kind == "reference" and ident.mark == "REF" and ident.same_launch
        assert ident.candidate is not None and ident.baseline is not None
        assert ident.candidate.symbol == ident.baseline.symbol
    assert trust.identities[SP[0]].candidate.symbol == SP_SYMBOL  # type: ignore[union-attr]
    assert trust.summary.startswith("WARNING: candidate identity: 0 of 6 rows")


def test_table_marks_rows_and_says_it_under_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONSTRUCTED FROM REAL CAPTURES: `table` text/JSON/CSV carry the REF mark and the warning line."""
    root = _copy(tmp_path, "matmul")
    _candidate_runs_baseline_captures(root / "matmul")
    rc, out, _err = _run(capsys, "table", "matmul", "--out-root", str(root))
    assert rc == 0
    rows = [ln for ln in out.splitlines() if ln.startswith(NP + SP)]
    assert len(rows) == 6 and all(ln.rstrip().endswith("REF") for ln in rows)
    assert any(
        ln.startswith("WARNING: candidate identity: 0 of 6 rows ran cutile-rs's own kernels")
        for ln in out.splitlines()
    )
    rc, out, _err = _run(capsys, "table", "matmul", "--out-root", str(root), "--json")
    doc = json.loads(out)
    assert {r["identity"]["kind"] for r in doc["rows"]} == {"reference"}
    assert doc["candidate_identity"]["warning"] is True
    rc, out, _err = _run(capsys, "table", "matmul", "--out-root", str(root), "--csv")
    head, *lines = out.splitlines()
    assert ",identity,identity_why," in head and all(",REF," in ln for ln in lines)


def test_real_table_marks_own_kernels(capsys: pytest.CaptureFixture[str]) -> None:
    """REAL: the recorded matmul session's rows are all marked ``own``."""
    rc, out, _err = _run(capsys, "table", "matmul", "--out-root", str(SESSION))
    assert rc == 0
    rows = [ln for ln in out.splitlines() if ln.startswith(NP + SP)]
    assert len(rows) == 6 and all(ln.rstrip().endswith("own") for ln in rows)
    assert "candidate identity: all 6 rows ran cutile-rs's own kernels" in out


def test_done_never_stands_without_the_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CONSTRUCTED FROM REAL CAPTURES: silu_and_mul is DONE by the geomean rule (real logs, 0.9874); with the
    candidate running the baseline's kernel, performance.md keeps DONE but says so before the table and
    beside the verdict, and passes TileGym's validators (in-process)."""
    root = _copy(tmp_path, "silu_and_mul")
    _candidate_runs_baseline_captures(root / "silu_and_mul")
    rc, out, _err = _run(
        capsys, "report", "e", "silu_and_mul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    assert rc == 0 and out.endswith("VERDICT: DONE\n")
    md = (root / "silu_and_mul" / "reports" / "performance.md").read_text()
    assert md.startswith("VERDICT: DONE\n")
    ident_at, table_at = md.index("### Candidate identity"), md.index("| Config | baseline |")
    assert ident_at < table_at
    assert "WARNING: DONE by the geomean rule, but WARNING: candidate identity: 0 of 4 rows" in md
    raw = md[md.index("### Raw CUPTI rows") :]
    cand_rows = [ln for ln in raw.splitlines() if "| candidate | cutile-rs |" in ln]
    assert len(cand_rows) == 4 and all(
        "REF: the reference's kernel" in ln and "same grid/block/registers/smem" in ln for ln in cand_rows
    )
    assert md.count("geomean_ratio=") == 1


def test_real_done_report_has_no_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """REAL: the real silu_and_mul session is DONE with its own kernels: the section says so, no warning."""
    root = _copy(tmp_path, "silu_and_mul")
    rc, _out, _err = _run(
        capsys, "report", "e", "silu_and_mul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    md = (root / "silu_and_mul" / "reports" / "performance.md").read_text()
    assert rc == 0 and "candidate identity: all 4 rows ran cutile-rs's own kernels" in md
    assert "WARNING" not in md


def test_f_reference_kernel_is_fixable_for_slow_and_passing_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONSTRUCTED FROM REAL CAPTURES: the non_persistent rows pass (~1.00x, real logs) and the static_persistent
    ones are slow; with the candidate running the reference's kernel, every row is FIXABLE, none ALIGNED, and
    the report puts both symbols side by side."""
    root = _copy(tmp_path, "matmul")
    _candidate_runs_baseline_captures(root / "matmul")
    rc, out, err = _run(
        capsys,
        "report",
        "f",
        "matmul",
        "--out-root",
        str(root),
        "--tilegym",
        str(_tilegym(tmp_path)),
        "--yes",
        "--no-real-scripts",
    )
    assert rc == 0 and out.endswith("VERDICT: FIXABLE\n"), err
    reports = root / "matmul" / "reports"
    invs = {p.name: p.read_text() for p in reports.glob("perf_investigation_*.md")}
    assert invs and all(t.startswith("VERDICT: FIXABLE\n") for t in invs.values())
    assert not any("ALIGNED" in t.splitlines()[0] for t in invs.values())
    passing = next(t for t in invs.values() if NP[0] in t.split("## Launch-count evidence")[0])
    assert "does not measure the candidate" in passing and "## Candidate identity" in passing
    row = next(ln for ln in passing.splitlines() if ln.startswith(f"| {NP[0]} | REF |"))
    cells = row.split(" | ")
    assert cells[2] == cells[3] and cells[2].startswith("`_matmul_kernel_Kt1_")  # both symbols side by side
    assert "Agent D (wrapper / ffi.rs" in passing


def test_f_names_the_wrapper_line_that_delegates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CONSTRUCTED FROM REAL CAPTURES + SYNTHETIC wrapper edit: the REAL wrapper excerpt with one added import
    and call into the reference's module; F cites that file:line."""
    root = _copy(tmp_path, "matmul")
    _candidate_runs_baseline_captures(root / "matmul")
    tg = _tilegym(tmp_path)
    wrapper = tg / "src" / "tilegym" / "ops" / "cutile_rs" / "matmul.py"
    lines = wrapper.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("def matmul("))
    lines[at + 2 : at + 2] = [
        "    from tilegym.ops.cutile.matmul import matmul as _reference_matmul",
        "    return _reference_matmul(a, b)  # SYNTHETIC: a hidden delegation",
    ]
    wrapper.write_text("\n".join(lines) + "\n")
    calls = wrapper_delegations(wrapper)
    assert calls == [
        f"src/tilegym/ops/cutile_rs/matmul.py:{at + 4}: calls `_reference_matmul` "
        "(tilegym.ops.cutile.matmul.matmul)"
    ]
    rc, _out, _err = _run(
        capsys,
        "report",
        "f",
        "matmul",
        "--out-root",
        str(root),
        "--tilegym",
        str(tg),
        "--yes",
        "--no-real-scripts",
    )
    assert rc == 0
    inv = next((root / "matmul" / "reports").glob("perf_investigation_*.md")).read_text()
    assert f"src/tilegym/ops/cutile_rs/matmul.py:{at + 4}" in inv


def test_real_wrappers_do_not_delegate() -> None:
    """REAL: TileGym's cutile-rs wrapper excerpts call no other backend."""
    for name in ("matmul.py", "silu_and_mul.py", "bmm.py", "attention_sink.py"):
        assert wrapper_delegations(TG / "cutile_rs" / name) == []


# --------------------------------------------------------------------------- bad input (identity)


def _matmul_sets() -> list[LaunchSet]:
    return load_launch_sets(SESSION / "matmul" / "workbench" / "launches.json.gz")


def _rows() -> list:  # type: ignore[type-arg]
    ws = stage_e.open_kernel("matmul", out_root=SESSION, tilegym=None)
    return stage_e.ratio_table(ws).rows


def _strip(sets: list[LaunchSet], backend: str, **fields: object) -> list[LaunchSet]:
    out = []
    for s in sets:
        if s.backend == backend:
            calls = [
                dataclasses.replace(c, launches=tuple(dataclasses.replace(x, **fields) for x in c.launches))
                for c in s.calls
            ]
            s = dataclasses.replace(s, calls=calls)
        out.append(s)
    return out


def test_capture_without_symbols_is_unknown_never_guessed() -> None:
    """SYNTHETIC (real captures with the candidate's kernel names blanked)."""
    ids = candidate_identities(
        _rows(),
        _strip(_matmul_sets(), "cutile_rs", name=""),
        candidate_backend="cutile_rs",
        candidate_framework="cutile-rs",
    )
    assert {i.kind for i in ids.values()} == {"unknown"}
    assert all(i.mark == "?" and "no kernel symbol" in i.why for i in ids.values())


def test_capture_without_resources_decides_from_the_symbol_and_says_what_is_unknown() -> None:
    """SYNTHETIC (real captures with grid/registers/smem removed on the candidate side)."""
    sets = _strip(
        _matmul_sets(),
        "cutile_rs",
        grid=None,
        block=None,
        registers_per_thread=None,
        static_smem=None,
        dynamic_smem=None,
    )
    ids = candidate_identities(_rows(), sets, candidate_backend="cutile_rs", candidate_framework="cutile-rs")
    assert {i.kind for i in ids.values()} == {"candidate"}
    assert all(any("launch resources" in u for u in i.unknown) for i in ids.values())


def test_events_only_capture_and_no_capture_are_unknown() -> None:
    """SYNTHETIC: a CUDA-events-only set, and no captures at all."""
    sets = [
        dataclasses.replace(s, source="events") if s.backend == "cutile_rs" else s for s in _matmul_sets()
    ]
    ids = candidate_identities(_rows(), sets, candidate_backend="cutile_rs", candidate_framework="cutile-rs")
    assert all(i.kind == "unknown" and "CUDA-event timings only" in i.why for i in ids.values())
    ids = candidate_identities(_rows(), [], candidate_backend="cutile_rs", candidate_framework="cutile-rs")
    assert all(i.kind == "unknown" and "launches.json.gz absent" in i.why for i in ids.values())


def test_no_kernel_launched_is_nothing_measurable() -> None:
    """SYNTHETIC (real captures with the candidate's launches removed)."""
    sets = [
        dataclasses.replace(s, calls=[dataclasses.replace(c, launches=()) for c in s.calls])
        if s.backend == "cutile_rs"
        else s
        for s in _matmul_sets()
    ]
    ids = candidate_identities(_rows(), sets, candidate_backend="cutile_rs", candidate_framework="cutile-rs")
    assert {i.kind for i in ids.values()} == {"none"} and all(i.mark == "NONE" for i in ids.values())


# --------------------------------------------------------------------------- item 2: the reference's config


def test_decode_real_cutile_symbols() -> None:
    """REAL symbols from the recorded captures."""
    d = decode_cutile_symbol(SP_SYMBOL)
    assert d is not None and d.function == "_static_persistent_matmul_kernel"
    assert [a.value for a in d.constants] == [128, 128, 64, False, False, 8, -1]
    eps = decode_cutile_symbol(
        "rms_norm_tile_kernel_Kt1_A2bf16_1v8l0_2t1_3i16_p16_A1bf16_1i16t1_p16_A2bf16_1v8l0_"
        "2t1_3i16_p16_I16_I1024_F3ee4f8b588e368f1"
    )
    assert eps is not None and [a.value for a in eps.constants] == [16, 1024, 1e-05]
    for name in ("static_persistent_matmul_kernel_entry", "rms_norm_fwd_kernel", "_ZN2at6native29vectorized"):
        assert decode_cutile_symbol(name) is None


def _strip_ir_and_best_config(kernel_dir: Path) -> None:
    """The recorded session as a run without --dump-ir and without best_config in analysis.json."""
    shutil.rmtree(kernel_dir / "workbench" / "ir")
    shutil.rmtree(kernel_dir / "generated")
    for p in (kernel_dir / "reference").glob("*.mlir"):
        p.unlink()
    analysis = kernel_dir / "reference" / "analysis.json"
    doc = json.loads(analysis.read_text())
    del doc["best_config"]
    analysis.write_text(json.dumps(doc, indent=1))


def test_matmul_without_ir_reaches_the_same_reference_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REAL: the recorded matmul session with and without its IR (and without best_config) names the same
    config per row — TILE 128x128x64 GROUP_SIZE_M 8 num_ctas 1 for static_persistent, 128x128x32 for
    non_persistent — and F's step 3 says first that the static_persistent one is ABSENT, in the candidate's
    spelling."""
    tg = _tilegym(tmp_path)
    answers = []
    for name, strip in (("with_ir", False), ("without_ir", True)):
        root = _copy(tmp_path / name, "matmul")
        if strip:
            _strip_ir_and_best_config(root / "matmul")
        ws = stage_e.open_kernel("matmul", out_root=root, tilegym=tg)
        trust = stage_e.trust(ws, stage_e.ratio_table(ws))
        answers.append(
            {p: (rc.config.label if rc.config else None) for p, rc in trust.reference_configs.items()}
        )
        rc_, out, _err = _run(
            capsys,
            "report",
            "f",
            "matmul",
            "--out-root",
            str(root),
            "--tilegym",
            str(tg),
            "--yes",
            "--no-real-scripts",
        )
        assert rc_ == 0 and out.endswith("VERDICT: FIXABLE\n")
        inv = root / "matmul" / "reports" / f"perf_investigation_{'_'.join(['2048'] * 3)}.md"
        text = (
            inv.read_text()
            if inv.exists()
            else next(
                t
                for t in ((root / "matmul" / "reports").glob("perf_investigation_*.md"))
                if SP[0] in t.read_text()
            ).read_text()
        )
        section = text[text.index("- variant static_persistent") :]
        first = section.splitlines()[1]
        assert first.startswith(
            "  - **the config the reference ran**: group_size_m=8 latency=auto num_ctas=1 "
            "occupancy=1 tile_k=64 tile_m=128 tile_n=128"
        )
        assert "**ABSENT** from the candidate's space" in first
        assert "`SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1)`" in first
    assert answers[0] == answers[1]
    assert {answers[0][p] for p in SP} == {
        "group_size_m=8 latency=auto num_ctas=1 occupancy=1 tile_k=64 tile_m=128 tile_n=128"
    }
    assert {answers[0][p] for p in NP} == {"num_ctas=1 occupancy=1 tile_k=32 tile_m=128 tile_n=128"}


def test_reference_config_without_a_symbol_or_triton_metadata_is_not_guessed() -> None:
    """REAL (rms_norm: a plain-Triton baseline) and SYNTHETIC (no symbol): each says what is unknown."""
    ws = stage_e.open_kernel("rms_norm", out_root=None, tilegym=None)
    trust = kernel_trust(ws, stage_e.ratio_table(ws), candidate_framework="cutile")
    assert trust.reference_configs
    for rc in trust.reference_configs.values():
        assert rc.config is None and not rc.decided
        assert any("Triton kernel metadata" in u for u in rc.unknown)
    none = reference_config("p", "cutile", None, space=None)
    assert none.config is None and "no kernel symbol" in none.text


def test_launches_file_round_trip_keeps_real_names(tmp_path: Path) -> None:
    """The constructed captures are written with the real writer and read back strictly."""
    root = _copy(tmp_path, "matmul")
    _candidate_runs_baseline_captures(root / "matmul")
    raw = json.loads(gzip.decompress((root / "matmul" / "workbench" / "launches.json.gz").read_bytes()))
    assert {s["backend"] for s in raw["sets"]} == {"cutile", "cutile_rs"}


def test_f_done_kernel_running_the_reference_is_fixable_not_aligned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONSTRUCTED FROM REAL CAPTURES: the issue's case — E DONE (real silu_and_mul logs, every row within the
    gate) while the candidate ran the reference's kernel. The old code wrote ALIGNED here; F must say FIXABLE."""
    root = _copy(tmp_path, "silu_and_mul")
    _candidate_runs_baseline_captures(root / "silu_and_mul")
    rc, out, _err = _run(
        capsys, "report", "f", "silu_and_mul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    assert rc == 0 and out.endswith("VERDICT: FIXABLE\n")
    invs = [p.read_text() for p in (root / "silu_and_mul" / "reports").glob("perf_investigation_*.md")]
    assert len(invs) == 4 and all(t.startswith("VERDICT: FIXABLE\n") for t in invs)
    assert all("_silu_and_mul_kernel_row_wise_Kt1_" in t.split("## Candidate identity")[1] for t in invs)
    for t in invs:  # step 0 leads; the (real) IR diff of the unmeasured cutile-rs kernel is only secondary
        root = t.split("## Root Cause\n", 1)[1].split("\n## ", 1)[0].splitlines()
        assert root[0].startswith("- config ") and "does not measure the candidate" in root[0]
        assert not any(ln.startswith("- diff_ir.sh verdict FAIL_FIXABLE") for ln in root)


def test_timeline_shows_identity_and_reference_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CONSTRUCTED FROM REAL CAPTURES (REF) and REAL (own + the decoded reference config) in `timeline`."""
    rc, out, _err = _run(capsys, "timeline", "matmul", "--out-root", str(SESSION), "--config", SP[0])
    assert rc == 0
    assert "candidate identity: own — a cutile-rs kernel (`static_persistent_matmul_kernel_entry`)" in out
    assert "ran group_size_m=8 latency=auto num_ctas=1 occupancy=1 tile_k=64 tile_m=128 tile_n=128" in out
    root = _copy(tmp_path, "matmul")
    _candidate_runs_baseline_captures(root / "matmul")
    rc, out, _err = _run(capsys, "timeline", "matmul", "--out-root", str(root), "--config", SP[0], "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["identity"]["kind"] == "reference" and doc["identity"]["same_launch"] is True


def test_no_captures_says_unknown_in_every_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """REAL session with its launches file removed (a run without per-launch capture): E and F say the
    identity is unknown and why; F's step 3 still has the reference's config only if its IR index names the
    entry symbol (it does here), never a guess."""
    root = _copy(tmp_path, "matmul")
    (root / "matmul" / "workbench" / "launches.json.gz").unlink()
    rc, _out, _err = _run(
        capsys, "report", "e", "matmul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    md = (root / "matmul" / "reports" / "performance.md").read_text()
    assert (
        rc == 0 and "Unknown for every row: no per-launch capture (workbench/launches.json.gz absent)." in md
    )
    rc, out, _err = _run(capsys, "table", "matmul", "--out-root", str(root))
    assert "?" in out.splitlines()[4] and "candidate identity: 0 of 6 rows" in out
    rc, _out, _err = _run(
        capsys, "report", "f", "matmul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    assert rc in (0, 1)
    inv = next((root / "matmul" / "reports").glob("perf_investigation_*.md")).read_text()
    assert "- Candidate identity: ? " in inv and "launches.json.gz absent" in inv
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    refs = stage_e.trust(ws, stage_e.ratio_table(ws)).reference_configs
    assert refs[SP[0]].symbol == SP_SYMBOL and refs[SP[0]].launch == ""  # from ir/index.json; no resources
    assert any("launch resources" in u for u in refs[SP[0]].unknown)


def test_only_library_kernels_is_lib() -> None:
    """SYNTHETIC (real captures with the candidate's kernel renamed to the real ATen symbol the silu_and_mul
    baseline records): a PyTorch fallback is LIB, never own."""
    aten = "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_15CUDAFunctor_addIN3c104HalfEEESt5arrayIPcLm3EEEEviT0_T1_"
    ids = candidate_identities(
        _rows(),
        _strip(_matmul_sets(), "cutile_rs", name=aten),
        candidate_backend="cutile_rs",
        candidate_framework="cutile-rs",
    )
    assert {i.mark for i in ids.values()} == {"LIB"} and all("PyTorch ATen" in i.why for i in ids.values())


def test_malformed_captures_leave_identity_unknown_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SYNTHETIC (a truncated gzip in place of the real launches file): `table` still prints E's table and
    marks every row `?` with the reader's message (file named); nothing is guessed."""
    root = _copy(tmp_path, "matmul")
    path = root / "matmul" / "workbench" / "launches.json.gz"
    path.write_bytes(path.read_bytes()[:100])
    rc, out, _err = _run(capsys, "table", "matmul", "--out-root", str(root), "--json")
    doc = json.loads(out)
    assert rc == 0 and {r["identity"]["mark"] for r in doc["rows"]} == {"?"}
    assert all("launches.json.gz" in r["identity"]["why"] for r in doc["rows"])


def test_symbol_families_of_real_names() -> None:
    """REAL symbols (recorded captures) plus the real cuBLAS/CUTLASS naming patterns (SYNTHETIC names)."""
    from cutile_workbench.evidence.candidate_identity import symbol_family

    assert symbol_family("static_persistent_matmul_kernel_entry") == "cutile-rs"
    assert symbol_family(SP_SYMBOL) == "cuTile Python"
    assert symbol_family("rms_norm_fwd_kernel") == "plain"
    assert (
        symbol_family(
            "_ZN2at6native29vectorized_elementwise_kernelILi8ENS0_11FillFunctorIN3c108BFloat16EEESt5arr"
            "ayIPcLm1EEEEviT0_T1_"
        )
        == "PyTorch ATen"
    )
    assert (
        symbol_family("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1")
        == "library"
    )
    assert symbol_family("_ZN7cutlass7Kernel2I") == "library"
    assert symbol_family("gemv_kernel_entry") == "cutile-rs"  # SYNTHETIC: a library-sounding cutile-rs entry
    assert symbol_family("") == "unknown"


def test_delegating_wrapper_script_makes_a_wrapper_the_audit_flags(tmp_path: Path) -> None:
    """SYNTHETIC mini TileGym tree (stub ``register_impl``, stub ops): bench/delegating_wrapper.py (the GPU
    step ``delegate``) makes the cutile-rs op return the reference's result, and the static audit cites it."""
    import importlib
    import subprocess
    import sys

    src = tmp_path / "TileGym" / "src" / "tilegym"
    for d in ("backend", "ops/cutile", "ops/cutile_rs"):
        (src / d).mkdir(parents=True)
        (src / d / "__init__.py").write_text("")
    (src / "__init__.py").write_text("")
    (src / "ops" / "__init__.py").write_text("")
    (src / "backend" / "__init__.py").write_text(
        "def register_impl(name, backend):\n    return lambda f: f\n"
    )
    (src / "ops" / "cutile" / "toy.py").write_text(
        'from tilegym.backend import register_impl\n\n\n@register_impl("toy", backend="cutile")\n'
        'def toy(input, out=None):\n    return ("reference", input, out)\n'
    )
    (src / "ops" / "cutile_rs" / "toy.py").write_text(
        'from tilegym.backend import register_impl\n\n\n@register_impl("toy", backend="cutile-rs")\n'
        'def toy(input, out=None, **kwargs):\n    """docstring stays first."""\n    return ("cutile-rs", input, out)\n'
    )
    script = HERE.parent / "bench" / "delegating_wrapper.py"
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "TileGym"), "toy"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    wrapper = src / "ops" / "cutile_rs" / "toy.py"
    calls = wrapper_delegations(wrapper)
    assert len(calls) == 1 and "calls `_reference_impl` (tilegym.ops.cutile.toy.toy)" in calls[0]
    sys.path.insert(0, str(tmp_path / "TileGym" / "src"))
    try:
        mod = importlib.import_module("tilegym.ops.cutile_rs.toy")
        assert mod.toy(1, out=2, extra=3) == ("reference", 1, 2)  # extra dropped: the reference takes no **kw
        assert mod.toy.__doc__ == "docstring stays first."
    finally:
        sys.path.remove(str(tmp_path / "TileGym" / "src"))
        for name in [m for m in sys.modules if m == "tilegym" or m.startswith("tilegym.")]:
            del sys.modules[name]
    bad = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "TileGym"), "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "error:" in bad.stderr


def test_aten_kernel_the_reference_test_also_ran_is_lib_not_ref() -> None:
    """SYNTHETIC (real silu_and_mul captures, candidate kernel renamed to the ATen add the cuTile baseline's
    REAL backward set records): still LIB — a PyTorch helper is never 'the reference's kernel'."""
    sets = load_launch_sets(SESSION / "silu_and_mul" / "workbench" / "launches.json.gz")
    aten = next(
        x.name
        for s in sets
        if s.backend == "cutile"
        for c in s.calls
        for x in c.launches
        if "CUDAFunctor_add" in x.name
    )
    ws = stage_e.open_kernel("silu_and_mul", out_root=SESSION, tilegym=None)
    ids = candidate_identities(
        stage_e.ratio_table(ws).rows,
        _strip(sets, "cutile_rs", name=aten),
        candidate_backend="cutile_rs",
        candidate_framework="cutile-rs",
    )
    assert {i.mark for i in ids.values()} == {"LIB"}


def test_identity_and_reference_config_decode_only_the_rows_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26 x 18: on a per-config capture store, each row's identity and the reference's config read
    that row's sets only (``for_params``), never a scan of the whole store per row: the store keeps a
    bounded cache of decoded sets, so at 1,000 configs a scan per row decoded every set again and a TUI
    paint took minutes. REAL matmul captures, re-written as the runner writes them now."""
    from cutile_workbench.artifacts import launch_store, launches_io
    from cutile_workbench.services import stage_e

    root = _copy(tmp_path, "matmul")
    data = root / "matmul" / "workbench" / "launches.json.gz"
    launch_store.write_store(data, launches_io.load_launch_sets(data))
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    table = stage_e.ratio_table(ws)
    scans: list[int] = []
    real_iter = launch_store.LaunchStore.__iter__

    def counting_iter(self):  # type: ignore[no-untyped-def]
        scans.append(1)
        return real_iter(self)

    monkeypatch.setattr(launch_store.LaunchStore, "__iter__", counting_iter)
    trust = stage_e.trust(ws, table)
    assert {i.mark for i in trust.identities.values()} == {"own"}
    assert trust.reference_configs  # the reference's config still decoded from its captured symbol
    assert scans == []


def test_trust_is_computed_once_per_content_of_its_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26 x 18: identity decodes every row's captures, so the TUI and `table` reuse it while the
    captures, logs and sources are unchanged, and recompute it when one changes. REAL matmul session."""
    from cutile_workbench.artifacts import derive_cache
    from cutile_workbench.evidence import trust as trust_mod
    from cutile_workbench.services import stage_e

    root = _copy(tmp_path, "matmul")
    ws = stage_e.open_kernel("matmul", out_root=root, tilegym=None)
    table = stage_e.ratio_table(ws)
    calls: list[int] = []
    real = trust_mod.kernel_trust

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*a, **kw)

    def command():  # type: ignore[no-untyped-def]  # each command opens its own session (one KernelSession per command)
        return stage_e.open_kernel("matmul", out_root=root, tilegym=None)

    # the kernel-level derivation behind the one cached path (issue 31: report e/f take it too)
    monkeypatch.setattr(trust_mod, "kernel_trust", counting)
    first = stage_e.trust(ws, table)
    assert stage_e.trust(ws, table) is first and calls == [1]  # the same session: computed once
    derive_cache._DERIVED.clear()  # a new process: served from the user cache dir
    assert stage_e.trust(command(), table) == first and calls == [1]
    data = root / "matmul" / "workbench" / "launches.json.gz"
    os.utime(data, None)  # same content: still a hit (keyed on content, not mtime)
    stage_e.trust(command(), table)
    assert calls == [1]
    data.write_bytes(data.read_bytes() + b"")  # unchanged bytes again
    (root / "matmul" / "workbench" / "session.json").write_text(
        (root / "matmul" / "workbench" / "session.json").read_text() + "\n"
    )
    stage_e.trust(command(), table)
    assert calls == [1, 1]
