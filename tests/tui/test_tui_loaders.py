"""load_app_data on real fixtures (H200 perf logs) and on malformed files (named in problems)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import settle, until

from cutile_workbench.errors import InputError
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import find_gpu, load_app_data
from cutile_workbench.tui.modals import ConfirmModal
from cutile_workbench.tui.screens.report import ReportScreen

FIX = Path(__file__).parent.parent / "fixtures"
REAL_E = FIX / "e" / "real"


@pytest.fixture()
def out_root(tmp_path: Path) -> Path:
    """A temp copy of the real rms_norm E inputs (H200 logs), plus a real IR pair and launches."""
    root = tmp_path / "out"
    shutil.copytree(REAL_E / "rms_norm", root / "rms_norm")
    kdir = root / "rms_norm"
    (kdir / "generated").mkdir()
    shutil.copy(FIX / "ir" / "rms_norm_ref_16x1024.mlir", kdir / "reference" / "reference.mlir")
    shutil.copy(FIX / "ir" / "rms_norm_ref_4x8192.mlir", kdir / "generated" / "generated_canon.mlir")
    (kdir / "workbench").mkdir()
    shutil.copy(FIX / "f" / "rms_norm_16384x2048.launches.json", kdir / "workbench" / "launches.json.gz")
    return root


def test_real_out_root_loads_table_ir_launches(out_root: Path) -> None:
    data = load_app_data("rms_norm", out_root=out_root, tilegym=None, env={})
    assert data.problems == []
    assert data.table is not None and len(data.table.rows) == 5
    assert data.table.geomean == pytest.approx(0.99895, abs=1e-4)  # real H200 medians
    assert data.ir_pairs == [] and data.ir_loader is not None  # deferred until after first paint
    pairs, ir_problems = data.ir_loader()
    assert ir_problems == [] and len(pairs) == 1 and pairs[0].rows
    assert pairs[0].audit and pairs[0].verdict in ("PASS", "PASS_WITH_NOTES", "FAIL_FIXABLE")
    assert data.launch_sets and data.plan_report is not None


def test_malformed_inputs_become_problems_naming_file_and_line(out_root: Path) -> None:
    kdir = out_root / "rms_norm"
    (kdir / "workbench" / "launches.json.gz").write_text('{"version": 1, "sets": [')
    (kdir / "workbench" / "session.json").write_text('{\n "gpu": "H200",\n oops\n}')
    (kdir / "generated" / "generated_canon.mlir").write_text("entry @k() {\n  %0 = addf\n")  # unclosed
    data = load_app_data("rms_norm", out_root=out_root, tilegym=None, env={})
    assert data.ir_loader is not None
    pairs, ir_problems = data.ir_loader()
    # a truncated IR file is diffed (what cannot be parsed is text-diffed, never "equivalent") and reported
    assert len(pairs) == 1 and pairs[0].structure == "not fully parsed"
    text = "\n".join(str(p) for p in [*data.problems, *ir_problems])
    assert "launches.json.gz" in text
    assert "session.json:3" in text
    assert "generated_canon.mlir:2: truncated IR" in text
    assert all(isinstance(p, InputError) for p in [*data.problems, *ir_problems])
    assert data.table is not None  # the rest still loads


async def test_app_notifies_problems_and_does_not_crash(out_root: Path) -> None:
    kdir = out_root / "rms_norm"
    (kdir / "workbench" / "session.json").write_text("[1, 2")
    (kdir / "generated" / "generated_canon.mlir").write_bytes(b"entry @k() {\x00}\n")  # binary junk
    data = load_app_data("rms_norm", out_root=out_root, tilegym=None, env={})
    app = make_app(data)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)  # started, the background IR load included, and every worker ended
        await app.workers.wait_for_complete()
        await until(pilot, lambda: _notified(app, "session.json", "generated_canon.mlir"), "both problems")
        msgs = [str(n.message) for n in app._notifications]
        assert any("session.json" in m for m in msgs)
        assert any("generated_canon.mlir" in m for m in msgs)  # from the background IR load
        await pilot.press("2", "3", "4", "1")
        await settle(pilot)  # every screen's load done (a crash would surface here); no run in this test


async def test_write_e_report_through_guarded_writer(out_root: Path) -> None:
    """The Report screen writes the real E plan of a temp copy of real logs via write_plan."""
    data = load_app_data("rms_norm", out_root=out_root, tilegym=None, env={})
    app = make_app(data)
    target = out_root / "rms_norm" / "reports" / "performance.md"
    assert not target.exists()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("4", "e")
        await app.workers.wait_for_complete()
        await until(pilot, _report_planned(app), "the Report screen with E's plan")
        screen = app.screen
        assert isinstance(screen, ReportScreen) and screen.plan is not None
        assert screen.plan.ok, screen.plan.validator_output
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), "w asks first")
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await until(pilot, target.exists, "the report written")  # write_plan writes atomically
    assert target.read_text().startswith("VERDICT: DONE")
    assert "geomean_ratio=0.9989" in target.read_text()


def _notified(app: Any, *names: str) -> bool:
    """Each of ``names`` is in a notification (read as the test reads them)."""
    msgs = [str(n.message) for n in app._notifications]
    return all(any(name in m for m in msgs) for name in names)


def _report_planned(app: Any) -> Callable[[], bool]:
    def planned() -> bool:
        screen = app.screen
        return isinstance(screen, ReportScreen) and screen.plan is not None

    return planned


def test_find_gpu_in_runs() -> None:
    assert find_gpu({"runs": {"candidate": {"gpu": "NVIDIA H200, 580.159.04"}}}) == "NVIDIA H200, 580.159.04"
    assert find_gpu({}) is None and find_gpu(None) is None


RECORDED = (
    Path(__file__).resolve().parents[2]
    / "cutile_workbench"
    / "profiles"
    / "rms_norm"
    / "session"
    / "rms_norm"
)


@pytest.mark.skipif(not RECORDED.is_dir(), reason="recorded rms_norm session not in this checkout")
async def test_embedded_default_opens_recorded_session_read_only() -> None:
    """``cutile-workbench rms_norm`` with no out root and no TileGym: the recorded H200 session."""
    data = load_app_data("rms_norm", out_root=None, tilegym=None, env={})
    assert data.source == "recorded" and "H200" in data.gpu
    assert data.table is not None and data.table.rows and data.launch_sets
    from cutile_workbench.services.runs import gpu_present

    assert (data.runner is not None) == gpu_present()  # offered to re-run live only on a GPU node
    assert "read-only" in data.read_only
    app = make_app(data)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)  # the Ratios table loaded (no run started in this test)
        await pilot.press("enter")
        await until(
            pilot,
            lambda: any(tl.lanes for tl in app.screen.query("#timeline")),
            "Enter opens the Timeline with its lanes",
        )
        tl = app.screen.query_one("#timeline")
        assert {ln.role for ln in tl.lanes} == {"candidate", "baseline"}  # real CUPTI captures
        await pilot.press("4", "e")
        await app.workers.wait_for_complete()
        await until(pilot, _report_planned(app), "the Report screen with E's plan")
        screen = app.screen
        assert isinstance(screen, ReportScreen) and screen.plan is not None
        assert screen.check_action("write", ()) is True  # issue #20: the key answers, with the reason
        assert "read-only session" in str(screen.query_one("#report-status").render())
        from cutile_workbench.tui.modals import ErrorModal

        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ErrorModal), "w says why it cannot write")
        assert isinstance(app.screen, ErrorModal) and "read-only" in app.screen.error_text


def test_gpu_runner_reruns_candidate_then_baseline_node_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live runner's RunSpecs (the child pytest itself is covered by the runner's own tests)."""
    import threading
    from dataclasses import dataclass

    import cutile_workbench.services.runs as runs_service
    from cutile_workbench.artifacts.layout import KernelPaths
    from cutile_workbench.model import RatioRow

    specs: list[object] = []

    @dataclass
    class _Result:
        rc: int = 0

    def fake_run(spec: object, out: object, *, on_event: object, cancel: object) -> _Result:
        specs.append(spec)
        return _Result()

    monkeypatch.setattr(runs_service, "run_suite", fake_run)
    out = KernelPaths.under(tmp_path, "rms_norm")
    run = runs_service.config_rerunner("rms_norm", "cutile", tmp_path, out)
    row = RatioRow(
        "profiles/rms_norm/test_rms_norm.py::Test_RMSNorm::test_perf",
        "16384-2048-torch.bfloat16",
        None,
        "triton_tileir",
        0.0345,
        0.0384,
        1.11,
        "OK",
    )
    assert run([row], lambda ev: None, threading.Event()) == 0
    assert [(s.role, s.test_target, s.backend_token) for s in specs] == [  # type: ignore[attr-defined]
        ("candidate", f"{row.func_key}[cutile-16384-2048-torch.bfloat16]", "cutile"),
        ("baseline_triton_tileir", f"{row.func_key}[triton-16384-2048-torch.bfloat16]", "triton"),
    ]
    cancel = threading.Event()
    cancel.set()
    assert run([row], lambda ev: None, cancel) == 130


def test_run_app_bad_kernel_exits_2_without_starting(capsys: pytest.CaptureFixture[str]) -> None:
    from cutile_workbench.tui.app import run_app

    assert run_app("../etc", out_root=None, tilegym=None) == 2
    err = capsys.readouterr().err
    assert err.startswith("cutile-workbench: ") and "etc" in err
