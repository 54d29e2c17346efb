"""``report f`` on the REAL recorded sessions, and its exit/refusal hygiene (issue 12 item 7).

- REAL: profiles/tilegym/session/{matmul,silu_and_mul} (cutile-rs vs cuTile Python, TileGym's own
  test_perf on the H200, 2026-12-01; README there) and the REAL TileGym 75a1430 wrapper excerpts of
  tests/fixtures/f/tilegym_75a1430 laid out as a TileGym tree (what ``--tilegym`` reads).
- SYNTHETIC (labelled per test): an empty kernel dir (BLOCKED) and LaunchSummary pairs for the
  register-cap rule.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cutile_workbench.cli import main

HERE = Path(__file__).parent.parent
SESSION = HERE.parent / "cutile_workbench" / "profiles" / "tilegym" / "session"
TG = HERE / "fixtures" / "f" / "tilegym_75a1430"
SP = (
    "True-True-False-False-2048-2048-2048-0-0-torch.float16",
    "True-True-False-False-4096-4096-4096-0-0-torch.float16",
    "True-True-False-False-8192-8192-8192-0-0-torch.float16",
)
MISSING = "SimpleNamespace(BM=128, BN=128, BK=64, NUM_CTAS=1, OCCUPANCY=1)"


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


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _listing(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_mtime_ns) for p in root.rglob("*"))


def test_matmul_is_fixable_and_names_the_missing_reference_config_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(tmp_path, "matmul")
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
    assert rc == 0 and out.endswith("VERDICT: FIXABLE\n")
    assert sorted(ln.split(":")[0] for ln in err.splitlines() if ": FIXABLE" in ln) == sorted(SP)
    reports = root / "matmul" / "reports"
    for params in SP:
        text = (reports / f"perf_investigation_{params}.md").read_text()
        assert text.startswith("VERDICT: FIXABLE\n") and "Verdict rule V3" in text
        root_cause = text.split("## Root Cause\n", 1)[1].split("## Action Items\n", 1)[0]
        actions = text.split("## Action Items\n", 1)[1].split("## Confidence\n", 1)[0]
        # the one fixable cause: the reference's tuned config is not in the cutile-rs search space
        fixable = [
            ln for ln in root_cause.splitlines() if ln.startswith("- ") and "(not a root cause)" not in ln
        ]
        assert len(fixable) == 1 and "search space of static_persistent" in fixable[0]
        assert actions.count(MISSING) == 1 and f"`{MISSING}` (the reference best config)" in actions
        assert "_static_persistent_configs()" in actions
        # the IR criticals a different tile config produces are its consequence, not a kernel.rs action
        assert "Agent B (kernel.rs)" not in actions
        assert (
            "(not a root cause) diff_ir.sh criticals that follow from the different tuned config"
            in root_cause
        )
        assert "num_cta hint mismatch ref=1 gen=4" in root_cause
        # both sides sit at 255 registers: not called pressure
        assert "register cap" not in text
        # the wrapper's key (m, n, k, a.dtype, persistent) covers static_persistent; trans_* are refused
        assert "lacks analysis.json autotune_key" not in text
        parity = text.split("## Config parity\n", 1)[1].split("\n## ", 1)[0]
        assert "found no gap" not in parity
        assert (
            "| static_persistent | tile_k=64 tile_m=128 tile_n=128 | yes | **ABSENT** "
            "(src/tilegym/ops/cutile_rs/matmul.py:29 _static_persistent_configs()) |"
        ) in parity
        assert "| non_persistent | tile_k=32 tile_m=128 tile_n=128 | yes | present" in parity
        assert "- cutile-rs wrapper key: covers every analysis.json autotune_key field" in parity
    agent_f = (reports / "agent_f.md").read_text()
    assert "found no gap" not in agent_f and "**ABSENT**" in agent_f


def test_matmul_without_the_checkout_says_what_it_could_not_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(tmp_path, "matmul")
    rc, _out, _err = _run(
        capsys, "report", "f", "matmul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    assert rc == 0
    text = (root / "matmul" / "reports" / f"perf_investigation_{SP[0]}.md").read_text()
    parity = text.split("## Config parity\n", 1)[1].split("\n## ", 1)[0]
    assert "not audited: the cutile-rs wrapper source was not read (pass --tilegym DIR)" in parity
    assert "- cutile-rs wrapper key: not checked (the wrapper source was not read)" in parity
    assert (
        "present" not in parity.split("| variant |", 1)[1].split("\n\n", 1)[0]
    )  # never claimed without the audit


def test_silu_and_mul_done_at_e_is_aligned_with_nothing_to_investigate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(tmp_path, "silu_and_mul")
    rc, out, err = _run(
        capsys, "report", "f", "silu_and_mul", "--out-root", str(root), "--yes", "--no-real-scripts"
    )
    assert rc == 0 and out.endswith("VERDICT: ALIGNED\n")
    assert (
        "note: E's verdict is DONE (geomean_ratio=0.9874" in err and "nothing to investigate (rule V2)" in err
    )
    reports = root / "silu_and_mul" / "reports"
    assert sorted(p.name for p in reports.glob("perf_investigation_*.md")) == [
        "perf_investigation_all_shapes.md"
    ]
    text = (reports / "perf_investigation_all_shapes.md").read_text()
    assert text.startswith("VERDICT: ALIGNED\n\n# Perf Investigation: silu_and_mul all shapes (none slow)\n")
    assert "slow shapes" not in text and "Agent E verdict: DONE" in text and "High. Verdict rule V2." in text
    assert "No launch evidence" not in text
    launches = text.split("## Launch-count evidence\n", 1)[1].split("## Root Cause\n", 1)[0]
    assert (
        "(per-launch CUPTI capture) for 4 of 4 config(s): the candidate launches no more than the reference"
        in launches
    )
    assert (
        launches.count(" | 1/1 | ") == 4
        and "| 64-1024-4096-torch.float16 | 1/1 | 389.74 us / 408.49 us |" in launches
    )
    assert "workbench/launches.json.gz" in text.split("## Confidence\n", 1)[1]


def test_blocked_exits_1_also_under_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SYNTHETIC: an empty kernel dir (no E table) is BLOCKED (V1)."""
    root = tmp_path / "out"
    (root / "k").mkdir(parents=True)
    before = _listing(root)
    rc, out, _err = _run(
        capsys, "report", "f", "k", "--out-root", str(root), "--dry-run", "--no-real-scripts"
    )
    assert rc == 1 and "DRY RUN: nothing written; the reports would say VERDICT: BLOCKED" in out
    assert _listing(root) == before
    rc, out, _err = _run(capsys, "report", "f", "k", "--out-root", str(root), "--yes", "--no-real-scripts")
    assert rc == 1 and out.endswith("VERDICT: BLOCKED\n")


@pytest.mark.parametrize("how", ["default", "out-root"])
def test_the_recorded_session_is_never_written(how: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = _listing(SESSION)
    extra = ["--out-root", str(SESSION)] if how == "out-root" else []
    rc, _out, err = _run(capsys, "report", "f", "matmul", *extra, "--yes", "--no-real-scripts")
    assert (
        rc == 2 and "the recorded session is read-only; copy it (cp -r" in err and "or use --dry-run" in err
    )
    rc, out, _err = _run(capsys, "report", "f", "matmul", *extra, "--dry-run", "--no-real-scripts")
    assert rc == 0 and "DRY RUN: nothing written" in out
    assert _listing(SESSION) == before


def test_register_cap_is_pressure_only_where_the_reference_stays_below_it() -> None:
    """SYNTHETIC summaries (resources only): both at 255 is no difference; 255 vs 168 is."""
    from cutile_workbench.evidence.launches import LaunchSummary
    from cutile_workbench.stages.f.diagnosis import resource_finding

    def summary(backend: str, regs: int) -> LaunchSummary:
        return LaunchSummary(
            backend=backend,
            params="p",
            nodeid="n",
            source="cupti",
            calls_total=10,
            calls_used=10,
            launches_per_call=1,
            groups=(),
            main_kernel="k",
            main_per_launch_us=10.0,
            main_count=1,
            measured_sum_us=10.0,
            main_durations_ns=(10_000,),
            registers_per_thread=regs,
            smem_bytes=0,
            static_smem=0,
            dynamic_smem=0,
            grid=(132, 1, 1),
            block=(256, 1, 1),
        )

    same = resource_finding(summary("cutile_rs", 255), summary("cutile", 255), "l")
    assert same is None
    capped = resource_finding(summary("cutile_rs", 255), summary("cutile", 168), "l")
    assert capped is not None and capped.fixable
    assert "the candidate sits at the register cap (255/thread vs 168 for the reference)" in capped.summary
