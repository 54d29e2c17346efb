"""``report f --demonstrate`` (issue 23 B) on the CPU: the edit, the overlay, the report section.

Data: the REAL recorded matmul session (cutile-rs vs cuTile on an H200; static_persistent 1.73-2.04x
because the reference's TILE 128x128x64 is absent from the cutile-rs space) and TileGym's real
wrapper from the snapshot at 75a1430. The re-run itself needs a GPU: here it is a STAND-IN
(``replay_run``) that replays the recorded candidate log as the "after" run, so the numbers in the
section are the recorded ones (after = before) and only the plumbing is under test; the GPU test
(tests/gpu/test_demonstrate_gpu.py) measures the real after.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from cutile_workbench.cli import main
from cutile_workbench.evidence.search_space import TuneConfig, compare_spaces, wrapper_spaces
from cutile_workbench.run.spec import RunResult, RunSpec
from cutile_workbench.services import stage_f
from cutile_workbench.services.demonstrate import plan_edits, tree_sha256
from cutile_workbench.stages.f.demonstrate import EditRefused, add_config_edit, render_demonstration

ROOT = Path(__file__).resolve().parents[2]
TILEGYM = ROOT / ".fetched" / "TileGym"
WRAPPER = "src/tilegym/ops/cutile_rs/matmul.py"
REC = ROOT / "cutile_workbench/profiles/tilegym/session/matmul"
needs_tilegym = pytest.mark.skipif(
    not (TILEGYM / WRAPPER).is_file(), reason="TileGym snapshot absent (.fetched)"
)


def _static_space(text: str, tmp_path: Path, name: str = "matmul.py") -> Any:
    p = tmp_path / name
    p.write_text(text)
    spaces, _notes = wrapper_spaces(p)
    return next(s for s in spaces if s.function == "_static_persistent_configs")


@needs_tilegym
def test_edit_adds_the_reference_config_in_the_candidates_spelling(tmp_path: Path) -> None:
    source = (TILEGYM / WRAPPER).read_text()
    space = _static_space(source, tmp_path)
    best = TuneConfig.of({"tile_m": 128, "tile_n": 128, "tile_k": 64})
    edit = add_config_edit(source, WRAPPER, space, best, reference_source="analysis.json best_config")
    assert edit.config == "SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1)"
    assert [ln for ln in edit.diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")] == [
        "+        SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1),  # added by cutile-workbench "
        "(the reference's config)"
    ]
    assert any("NUM_CTAS=1" in f for f in edit.filled)
    # the edited wrapper, read back by F's own audit, now covers the reference's config
    after = _static_space(edit.after, tmp_path, "matmul_edited.py")
    cmp = compare_spaces(after, after, "static_persistent", (best, "test"))
    assert cmp.best_present is True


def test_edit_rebinds_a_function_without_a_list_literal_and_refuses_unknown_knobs(tmp_path: Path) -> None:
    # SYNTHETIC wrapper: the configs come from a comprehension (no list literal to extend)
    source = (
        "from types import SimpleNamespace\n\n\ndef _cfgs():\n"
        "    return [SimpleNamespace(BM=b, BN=128, NUM_CTAS=2) for b in (64, 256)]\n\n\n"
        "def op(x):\n    return autotune_launch(kernel_fn=None, configs=_cfgs(), key=1)\n"
    )
    p = tmp_path / "w.py"
    p.write_text(source)
    space = wrapper_spaces(p)[0][0]
    edit = add_config_edit(
        source, "w.py", space, TuneConfig.of({"tile_m": 128, "tile_n": 128}), reference_source="t"
    )
    ns: dict[str, Any] = {}
    exec(compile(edit.after, "w.py", "exec"), ns)
    got = ns["_cfgs"]()
    assert (got[0].BM, got[0].BN, got[0].NUM_CTAS) == (128, 128, 1) and len(got) == 3
    with pytest.raises(EditRefused, match="cannot express"):
        add_config_edit(
            source,
            "w.py",
            space,
            TuneConfig.of({"tile_m": 128, "tile_n": 64, "latency": 3}),
            reference_source="t",
        )


def _workspace_copy(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    shutil.copytree(REC, root / "matmul")
    return root


def _files_sha(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def replay_run(seen: dict[str, Any], rc: int = 0) -> Any:
    """STAND-IN for cutile_workbench.run.runner.run (no GPU here): records what the overlay held, then
    returns the recorded candidate log as the run's raw log (after = before, labelled so)."""

    def run(spec: RunSpec, out: Any) -> RunResult:
        overlay_src = Path(spec.env["PYTHONPATH"].split(":")[0])
        seen["wrapper"] = (overlay_src / "tilegym/ops/cutile_rs/matmul.py").read_text()
        seen["cwd"], seen["k"] = spec.cwd, spec.k_expr
        seen["target_is_link"] = (overlay_src / "tilegym/ops/cutile_rs/cutile_kernels").exists()
        log = Path(out.root) / "replay.raw.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes((REC / "reports/agent_logs/perf_cutile_rs.full.txt").read_bytes())
        return RunResult(spec, rc, log, (), (), {}, {"x": "failed (stand-in)"} if rc == 1 else {}, {}, ())

    return run


@needs_tilegym
def test_demonstrate_runs_in_an_overlay_and_reports_before_after(tmp_path: Path) -> None:
    root = _workspace_copy(tmp_path)
    tree_before = tree_sha256(TILEGYM)
    logs_before = {k: v for k, v in _files_sha(root / "matmul").items() if not k.startswith("workbench/")}
    ws = stage_f.open_kernel("matmul", out_root=root, tilegym=TILEGYM)
    edits, notes = plan_edits(ws, stage_f.collect(ws))
    assert [(e.variant, e.function) for e in edits] == [
        ("static_persistent", "_static_persistent_configs")
    ], notes
    seen: dict[str, Any] = {}
    report = stage_f.plan(
        ws, run_real_scripts=False, demonstrate=stage_f.DemonstrateRequest(run_fn=replay_run(seen))
    )
    demo = report.demonstration
    assert demo is not None and demo.status == "done", demo
    assert "SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1)" in seen["wrapper"]
    assert seen["k"] is not None and "True-True-False-False-2048-2048-2048-0-0-torch.float16" in seen["k"]
    assert "True-False-False-False" not in seen["k"]  # only the slow configs re-run
    assert demo.configs == tuple(
        f"True-True-False-False-{n}-{n}-{n}-0-0-torch.float16" for n in (2048, 4096, 8192)
    )
    o = demo.outcomes[0]
    assert o.before_ratio == pytest.approx(2.04, abs=0.01) and o.after_ratio == pytest.approx(o.before_ratio)
    assert tree_sha256(TILEGYM) == tree_before == demo.tree_sha256_after
    assert not (root / "matmul" / demo.overlay).exists() and (root / "matmul" / demo.run_log).is_file()
    assert {
        k: v for k, v in _files_sha(root / "matmul").items() if not k.startswith("workbench/")
    } == logs_before
    files = {f.relpath: f.content for f in report.plan.files}
    inv = files["reports/perf_investigation_True-True-False-False-2048-2048-2048-0-0-torch.float16.md"]
    assert inv.startswith("VERDICT: FIXABLE\n") and "## Demonstrated in a throwaway copy" in inv
    assert "+        SimpleNamespace(BM=128, BN=128, BK=64" in inv and "unchanged after" in inv
    assert "| True-True-False-False-2048-2048-2048-0-0-torch.float16 | cutile | 24.06 | 49.09 | 2.040x" in inv
    section = inv.split("## Demonstrated in a throwaway copy")[1]
    assert not any(
        ln.startswith("| True-True-False-False-4096") for ln in section.splitlines()
    )  # its own row only
    assert report.plan.ok


@needs_tilegym
def test_a_failed_rerun_is_reported_with_its_log_and_the_overlay_can_be_kept(tmp_path: Path) -> None:
    root = _workspace_copy(tmp_path)
    ws = stage_f.open_kernel("matmul", out_root=root, tilegym=TILEGYM)
    report = stage_f.plan(
        ws,
        run_real_scripts=False,
        demonstrate=stage_f.DemonstrateRequest(run_fn=replay_run({}, rc=1), keep_overlay=True),
    )
    demo = report.demonstration
    assert demo is not None and demo.status == "failed" and "exited 1" in demo.reason
    assert (root / "matmul" / demo.overlay / "TileGym" / WRAPPER).is_file()
    assert "The demonstration FAILED" in render_demonstration(demo)
    assert report.plan.verdict == "FIXABLE"


@needs_tilegym
def test_demonstrate_refuses_the_recorded_session_and_dry_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    assert main(["report", "f", "matmul", "--demonstrate", "--yes", "--tilegym", str(TILEGYM)]) == 2
    err = capsys.readouterr().err
    assert "--demonstrate" in err and "recorded" in err
    assert main(["report", "f", "matmul", "--demonstrate", "--dry-run"]) == 2
    assert "--demonstrate" in capsys.readouterr().err


@needs_tilegym
def test_nothing_to_demonstrate_says_why(tmp_path: Path) -> None:
    root = tmp_path / "out"
    shutil.copytree(ROOT / "cutile_workbench/profiles/tilegym/session/silu_and_mul", root / "silu_and_mul")
    ws = stage_f.open_kernel("silu_and_mul", out_root=root, tilegym=TILEGYM)
    report = stage_f.plan(
        ws, run_real_scripts=False, demonstrate=stage_f.DemonstrateRequest(run_fn=replay_run({}))
    )
    assert report.demonstration is not None and report.demonstration.status == "not_applicable"
    assert "no slow config" in report.demonstration.reason
    assert (
        "Not demonstrated: no slow config"
        in {f.relpath: f.content for f in report.plan.files}["reports/agent_f.md"]
    )


def test_one_edit_batch_for_config_and_line_edits(tmp_path: Path) -> None:
    """SYNTHETIC wrapper texts: the one loop of both kinds of edit (review finding 3a). A refusal and a
    wrapper that does not parse are notes naming the edit; an edit that is kept is what the next edit of
    the same file starts from."""
    from cutile_workbench.stages.f.demonstrate import EditBatch, WrapperEdit

    (tmp_path / "ok.py").write_text("x = 1\n")
    (tmp_path / "bad.py").write_text("def (:\n")
    batch = EditBatch(lambda rel: (tmp_path / rel).read_text())

    def bump(text: str) -> WrapperEdit:
        after = text + "y = 2\n"
        return WrapperEdit("remove_canary", None, "ok.py", "<module>", "", "", "t", (), text, after)

    def refuse(_text: str) -> WrapperEdit:
        raise EditRefused("a knob with no default")

    def parse(text: str) -> WrapperEdit:
        compile(text, "bad.py", "exec")
        raise AssertionError("unreachable")

    batch.attempt("first", "ok.py", bump)
    batch.attempt("second", "ok.py", bump)
    batch.attempt("config of v", "ok.py", refuse, refused="not tried")
    batch.attempt("line of bad", "bad.py", parse)
    batch.attempt("missing", "gone.py", bump, unreadable="cannot read gone.py")
    assert [e.after for e in batch.edits] == ["x = 1\ny = 2\n", "x = 1\ny = 2\ny = 2\n"]
    assert batch.notes[0] == "config of v: not tried: a knob with no default"
    assert batch.notes[1].startswith("line of bad: cannot read the wrapper: invalid syntax")
    assert batch.notes[2].startswith("missing: cannot read gone.py: [Errno 2]")
