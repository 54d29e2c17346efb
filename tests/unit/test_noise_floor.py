"""A noise floor per row and the A/A ``calibrate`` command (issue 18 §4).

REAL: the recorded matmul session (one run per side: no A/A estimate, said so). SYNTHETIC (labelled):
extra baseline runs derived from that session's real cuTile samples (resampled; ``history_helpers``),
appended to the out root's history as the runner appends a live run.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from history_helpers import SP_2048, copy_matmul, derived_entry, provenance, utc

from cutile_workbench.artifacts.workspace import open_workspace
from cutile_workbench.cli import main
from cutile_workbench.evidence.gap import assess_gap
from cutile_workbench.history.noise import SideNoise, row_noise, side_spread
from cutile_workbench.history.query import open_history
from cutile_workbench.stages.e.report import plan_e_report


def _with_baseline_rerun(out_root: Path, scale: dict[str, float] | None = None) -> Path:
    """SYNTHETIC: two more cuTile baseline runs of one TileGym commit (the real samples resampled; the
    second scaled by ``scale`` per config). The real run's code identity is not recorded, so the A/A
    floor comes from the two synthetic ones."""
    paths = copy_matmul(out_root)
    store, _ = open_history(paths, source="out_root", persist=True)
    with store:
        run = next(r for r in store.runs() if any(role.startswith("baseline") for role in r.roles))
        base = [c for rid, c in store.configs() if rid == run.run_id]
        for i, (day, factor) in enumerate((("2026-12-02 10:00", None), ("2026-12-03 10:00", scale))):
            at = utc(day)
            entry = derived_entry(
                base, kernel="matmul", tag=f"aa{i}", at=at, prov=provenance(at), scale=factor, seed=7 + i
            )
            store.add(dataclasses.replace(entry, role="baseline_cutile"))
    return out_root


def test_a_code_change_between_runs_is_never_noise(tmp_path: Path):
    """SYNTHETIC: two candidate runs 20 % apart, of different cutile-rs libraries (a fix): no floor."""
    paths = copy_matmul(tmp_path)
    store, _ = open_history(paths, source="out_root", persist=True)
    with store:
        run = next(r for r in store.runs() if "candidate" in r.roles)
        cand = [c for rid, c in store.configs() if rid == run.run_id]
        for i, (day, lib, factor) in enumerate(
            (("2026-12-02 10:00", "a" * 64, 1.0), ("2026-12-03 10:00", "b" * 64, 0.8))
        ):
            at = utc(day)
            prov = dataclasses.replace(provenance(at), cutile_rs_lib_sha256=lib)
            store.add(
                derived_entry(
                    cand,
                    kernel="matmul",
                    tag=f"fix{i}",
                    at=at,
                    prov=prov,
                    scale={c.params: factor for c in cand},
                    seed=i,
                )
            )
    from cutile_workbench.services import stage_e

    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    row = next(r for r in stage_e.ratio_table(ws).rows if r.params == SP_2048)
    assert row.noise_floor is None
    assert row.noise_text.startswith("no A/A estimate: fewer than 2 runs of the same code on a side")


def test_spread_and_row_floor():
    assert side_spread([1.0]) is None and side_spread([1.0, 1.02, 0.99]) == pytest.approx(0.03 / 0.99)
    both = row_noise(SideNoise("cutile-rs", 1, None), SideNoise("cutile", 3, 0.021))
    assert both.floor == 0.021
    assert both.text == "±2.1% run-to-run (A/A: cutile-rs 1 run, cutile 2.1% over 3 runs)"
    none = row_noise(SideNoise("cutile-rs", 1, None), None)
    assert none.floor is None and none.text == (
        "no A/A estimate: fewer than 2 runs of the same code on a side in the history (cutile-rs 1 run)"
    )


def test_real_session_has_no_noise_floor_and_calibrate_says_why(capsys: pytest.CaptureFixture[str]):
    assert main(["table", "matmul"]) == 0
    assert "noise floor: no A/A estimate for any row: no run history here" in capsys.readouterr().out
    assert main(["calibrate", "matmul"]) == 2
    err = capsys.readouterr().err
    assert "key 'runs': the history holds 1 run of cutile: the A/A test needs two" in err


def test_two_baseline_runs_give_a_floor_and_a_clean_calibration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    _with_baseline_rerun(tmp_path)
    assert main(["calibrate", "matmul", "--out-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rows an identical candidate would have flagged (ratio > 1.05): 0 of 6 (goal 0)" in out
    assert "note:" not in out  # both synthetic runs carry one TileGym commit: a clean A/A test
    assert main(["table", "matmul", "--out-root", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert all(r["noise_floor"] is not None and r["noise_floor"] < 0.05 for r in rows)
    assert all("cutile-rs 1 run" in r["noise_text"] and "over 2 runs" in r["noise_text"] for r in rows)
    assert main(["table", "matmul", "--out-root", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert (
        "noise floor: run-to-run spread of each side's medians across the run history (A/A) for 6 of 6"
        in text
    )
    row = next(ln for ln in text.splitlines() if ln.startswith(SP_2048))
    assert "2.040x ±" in row
    plan = plan_e_report(open_workspace("matmul", out_root=tmp_path), run_real_scripts=False)
    assert plan.ok, plan.validator_output  # performance.md still passes the validators
    md = next(f.content for f in plan.files if f.relpath == "reports/performance.md")
    assert f"| {SP_2048} | cutile |" in md and "| 2.04x ±" in md


def test_a_noisy_baseline_is_flagged_by_calibrate_and_widens_f_noise_band(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """SYNTHETIC: the second baseline run is 8 % slower on static_persistent 2048³ (a noisy config)."""
    _with_baseline_rerun(tmp_path, {SP_2048: 1.08})
    assert main(["calibrate", "matmul", "--out-root", str(tmp_path), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["flagged"] == 1 and [r["params"] for r in doc["ratios"] if r["flagged"]] == [SP_2048]
    from cutile_workbench.services import stage_e

    ws = stage_e.open_kernel("matmul", out_root=tmp_path, tilegym=None)
    row = next(r for r in stage_e.ratio_table(ws).rows if r.params == SP_2048)
    assert row.noise_floor is not None and row.noise_floor > 0.07
    # F: a 1.07x per-launch gap is "real" under E's fixed 1.05 band, noise under this row's wider floor
    fixed = assess_gap(cand_per_launch_us=10.7, base_per_launch_us=10.0)
    assert fixed.status == "real"
    widened = assess_gap(cand_per_launch_us=10.7, base_per_launch_us=10.0, noise_floor=row.noise_floor)
    assert widened.status == "noise" and "run-to-run A/A spread" in widened.reason
    # ... and a floor narrower than E's gate never narrows the band
    assert assess_gap(cand_per_launch_us=10.4, base_per_launch_us=10.0, noise_floor=0.01).status == "noise"


def test_calibrate_names_the_backends_when_asked_for_an_absent_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    shutil.copytree(
        Path(__file__).resolve().parents[2] / "cutile_workbench/profiles/tilegym/session/matmul",
        tmp_path / "matmul",
    )
    assert main(["calibrate", "matmul", "--out-root", str(tmp_path), "--backend", "triton"]) == 2
    assert "no run of backend 'triton' in the history (present: cutile, cutile-rs)" in capsys.readouterr().err


@pytest.mark.skipif(
    shutil.which("nvidia-smi") is not None, reason="a GPU node would really measure the baseline twice"
)
def test_calibrate_run_without_a_gpu_says_so_and_measures_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert main(["calibrate", "rms_norm", "--run", "--out-root", str(tmp_path)]) == 2
    assert "key '--backend': calibrate --run needs --backend" in capsys.readouterr().err
    assert main(["calibrate", "rms_norm", "--run", "-b", "triton", "--out-root", str(tmp_path)]) == 2
    assert "calibrate: run 1 exited 2: no A/A test" in capsys.readouterr().out
    assert not (tmp_path / "rms_norm" / "workbench" / "history.sqlite").exists()


def test_a_sides_reason_and_no_side_at_all_are_said() -> None:
    """The explanation names why a side has no spread (its own reason, not "1 run"), and says "no run"
    when neither side was in the history (issue 35, second wave: both survived as wording; the text is
    what `table` and the report show under a row without a floor). SYNTHETIC sides."""
    why = "cutile-rs: 3 run(s), the latest without a recorded code identity (TileGym commit / cutile-rs library)"
    blind = row_noise(SideNoise("cutile-rs", 1, None, why), SideNoise("cutile", 1, None))
    assert blind.floor is None and blind.text == (
        f"no A/A estimate: fewer than 2 runs of the same code on a side in the history ({why}, cutile 1 run)"
    )
    nothing = row_noise(None, None)
    assert nothing.floor is None and nothing.text == (
        "no A/A estimate: fewer than 2 runs of the same code on a side in the history (no run)"
    )
