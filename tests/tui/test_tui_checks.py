"""Checks screen (mode 5): Pilot tests on small TileGym-shaped trees written by the tests.

The trees are SYNTHETIC (``tests/fixtures/tilegym_tree/fake_tilegym.py`` builders; the wrapper
with a fixed-config canary is ``test_checks_wrapper_audit.CANARY``, labelled there). The checks
run for real: the import probe and ``pytest --collect-only`` are child processes of this venv's
Python on the tree, the ``-k`` expressions and the wrapper audit come from the core. The Pilot
tests wait for the state they assert (``pilot_wait``), never for a fixed pause (issue #35).
"""

from __future__ import annotations

import hashlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from checks_helpers import fake
from pilot_wait import until
from test_checks_wrapper_audit import ANALYSIS as WRAPPER_ANALYSIS
from test_checks_wrapper_audit import CANARY
from tui_helpers import make_data

from cutile_workbench.services.checks import ChecksResult, gather_checks
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.commands import available_commands
from cutile_workbench.tui.modals import ErrorModal
from cutile_workbench.tui.screens.checks import ChecksScreen
from cutile_workbench.tui.widgets.checks_panel import CheckItem, ChecksPanel, render_items

REPO = Path(__file__).resolve().parents[2]

BMM_IDS = ["2-2048-2048-2048-False-False-torch.float16", "8-4096-4096-4096-False-False-torch.float16"]
ANALYSIS = {  # SYNTHETIC analysis.json (dict form of test_perf_configs, contract §2)
    "reference_backend": "cutile",
    "test_perf_configs": {
        "static_persistent": {
            "test": "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf",
            "shapes": [{"id": BMM_IDS[0]}, {"id": BMM_IDS[1]}],
        }
    },
}
# child pytest runs on the synthetic tree need no plugins; autoloading this venv's costs seconds
CHILD_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _tree(tmp_path: Path, *, autotuner: str | None = None, wrapper: str = CANARY) -> Path:
    root = fake.make_tree(
        tmp_path / "TileGym",
        autotuner=autotuner or fake.AUTOTUNER_BROKEN,
        tests={"test_bmm.py": fake.TEST_BMM_MISSING},
    )
    fake.write(root / "src" / "tilegym" / "ops" / "cutile_rs" / "bmm.py", wrapper)
    return root


def _fingerprint(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _data(root: Path, analysis: Any = ANALYSIS) -> Any:
    data = make_data()
    data.kernel = "bmm"
    data.tilegym = root
    data.run_checks = lambda cancelled: gather_checks(
        "bmm", root, analysis, python=sys.executable, env=CHILD_ENV, cancelled=cancelled
    )
    return data


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def _checks_shown(app: Any) -> bool:
    """The Checks screen is current and mounted (its status line and panel filled by its mount)."""
    return isinstance(app.screen, ChecksScreen) and app.screen.is_mounted


async def _run_checks(pilot: Any) -> ChecksScreen:
    await pilot.press("5")
    await until(pilot, lambda: _checks_shown(pilot.app), "5 opens the Checks screen")
    screen = pilot.app.screen
    assert isinstance(screen, ChecksScreen)
    await pilot.press("r")
    await until(pilot, lambda: screen.result is not None, "r runs the checks and their result is shown")
    await pilot.app.workers.wait_for_complete()
    return screen


async def test_checks_show_blocked_import_wiring_diff_selection_and_findings(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = _fingerprint(root)
    app = make_app(_data(root), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _run_checks(pilot)
        assert screen.result is not None and not screen.running
        by_section: dict[str, list[CheckItem]] = {}
        for item in screen.result.items:
            by_section.setdefault(item.section, []).append(item)
        # E precondition: BLOCKED with the traceback tail (the module the synthetic autotuner lacks)
        (pre,) = by_section["precondition"]
        assert pre.status == "BLOCKED"
        assert "ModuleNotFoundError" in pre.title and "cffi_is_not_installed_here" in pre.detail
        assert pre.cli.startswith("cutile-workbench check bmm --tilegym ")
        # wiring: 0 cases collected, the edit as a unified diff, applying it only as the CLI twin
        wiring = by_section["wiring"]
        assert wiring[0].status == "MISSING" and wiring[0].title.startswith("0 cutile-rs perf cases")
        edit = next(i for i in wiring if i.diff)
        assert edit.diff.startswith("--- a/tests/ops/test_bmm.py\n+++ b/tests/ops/test_bmm.py\n")
        assert '+    _perf_frameworks = ["cutile", "cutile-rs", "pytorch"]' in edit.diff
        assert edit.location == "tests/ops/test_bmm.py:9"
        assert edit.cli.endswith("--apply-wiring")
        # -k selection: test_perf has no cutile-rs yet, so the candidate side selects nothing and
        # a run would be refused; the baseline's -k keeps cutile from matching cutile_rs
        (ksel,) = by_section["kselect"]
        assert ksel.status == "REFUSED"
        assert "and not cutile_rs" in ksel.detail
        assert f"tests/ops/test_bmm.py::Test_BMM_FWD::test_perf[cutile-{BMM_IDS[0]}]" in ksel.detail
        assert "baseline only: tests/ops/test_bmm.py::Test_BMM_FWD::test_perf" in ksel.detail
        # wrapper audit: the canary at its line, with the rule and the seed's action
        wrapper = root / "src/tilegym/ops/cutile_rs/bmm.py"
        canary = next(i for i in by_section["audit"] if "canary_hot_path" in i.title)
        line = _line_of(wrapper, "_run_ffi(torch.empty_like(x), x, _CANARY)")
        assert canary.location == f"src/tilegym/ops/cutile_rs/bmm.py:{line}"
        assert canary.rule and canary.action
        assert canary.cli.startswith("cutile-workbench audit-wrapper bmm")
        # what the user sees: all four sections with their CLI twins, the diff lines included
        shown = screen.query_one(ChecksPanel).plain()
        for text in (
            "BLOCKED",
            "import failed",
            '+    _perf_frameworks = ["cutile", "cutile-rs", "pytorch"]',
            f"src/tilegym/ops/cutile_rs/bmm.py:{line}",
            "CLI twin: $ cutile-workbench check bmm",
            "--apply-wiring",
        ):
            assert text in shown, text
        # nothing offers to apply the edit inside the TUI
        titles = [t for t, _, _ in available_commands(app, screen)]
        assert not any("apply" in t.lower() for t in titles)
        assert not any("apply" in b.binding.action for b in screen.active_bindings.values())
    assert _fingerprint(root) == before, "the Checks screen modified the TileGym tree"


def _wired_tree(tmp_path: Path) -> Path:
    clean = CANARY.replace("    _run_ffi(torch.empty_like(x), x, _CANARY)\n", "")
    root = _tree(tmp_path, autotuner=fake.AUTOTUNER_OK, wrapper=clean)
    test = root / "tests/ops/test_bmm.py"
    # the tree after the wiring edit (SYNTHETIC: the edit the CLI twin would make)
    test.write_text(
        test.read_text().replace(
            '_perf_frameworks = ["cutile", "pytorch"]',
            '_perf_frameworks = ["cutile", "cutile-rs", "pytorch"]',
        )
    )
    return root


def test_wired_tree_with_importable_autotuner_and_clean_wrapper_is_all_ok(tmp_path: Path) -> None:
    root = _wired_tree(tmp_path)
    # the reference's autotune facts the clean wrapper matches (as in test_clean_wrapper_has_no_findings)
    analysis = {**ANALYSIS, **WRAPPER_ANALYSIS, "autotune_key": ["N", "dtype"]}
    result = gather_checks("bmm", root, analysis, python=sys.executable, env=CHILD_ENV)
    by = {i.section: i for i in result.items}
    assert [i.status for i in result.items] == ["OK"] * 4, render_items(result.items).plain
    assert by["wiring"].title == "16 cutile-rs perf case(s) selected"  # 2 q x 2 sizes x 4 transposes
    assert "same 2 config(s)" in by["kselect"].title
    assert f"tests/ops/test_bmm.py::Test_BMM_FWD::test_perf[cutile_rs-{BMM_IDS[0]}]" in by["kselect"].detail
    assert by["audit"].title == "no wrapper findings"
    assert not result.problems and not result.cancelled


def test_without_analysis_the_selection_is_skipped_with_its_cli_twin(tmp_path: Path) -> None:
    result = gather_checks("bmm", _wired_tree(tmp_path), None, python=sys.executable, env=CHILD_ENV)
    (ksel,) = [i for i in result.items if i.section == "kselect"]
    assert ksel.status == "SKIPPED" and "analysis.json" in ksel.title and "kselect bmm" in ksel.cli


def test_cancel_before_a_step_stops_there(tmp_path: Path) -> None:
    result = gather_checks(
        "bmm", _tree(tmp_path), ANALYSIS, python=sys.executable, env=CHILD_ENV, cancelled=lambda: True
    )
    assert result.cancelled and [(i.section, i.status) for i in result.items] == [
        ("precondition", "CANCELLED")
    ]


async def test_bad_wrapper_becomes_an_error_row_and_notification_naming_file_and_line(tmp_path: Path) -> None:
    root = _tree(tmp_path, wrapper="def bmm(x):\n    return (x\n")  # SYNTHETIC syntax error
    app = make_app(_data(root), prewarm=False)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _run_checks(pilot)
        assert screen.result is not None
        (err,) = [i for i in screen.result.items if i.section == "audit"]
        assert err.status == "ERROR" and "bmm.py" in err.title and ":2" in err.title
        # the other checks still ran
        assert {i.section for i in screen.result.items} >= {"precondition", "wiring", "kselect"}
        messages = [str(n.message) for n in app._notifications]
        assert any("bmm.py" in m for m in messages), messages
        assert "ERROR" in str(screen.query_one("#checks-status").render())


async def test_without_tilegym_the_screen_says_how_and_r_says_why() -> None:
    data = make_data()  # the synthetic session: no TileGym checkout attached
    assert data.run_checks is None
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("5")
        await until(pilot, lambda: _checks_shown(app), "5 opens the Checks screen")
        screen = app.screen
        assert isinstance(screen, ChecksScreen)
        body = str(screen.query_one("#checks-body").render())
        assert "No TileGym checkout" in body and "--tilegym DIR" in body and "TILEGYM_PATH" in body
        assert screen.check_action("run", ()) is True  # issue #20: r answers, with what is missing
        await pilot.press("r")
        await until(
            pilot,
            lambda: any("no TileGym checkout attached" in str(n.message) for n in app._notifications),
            "r says no TileGym checkout is attached",
        )
        assert not screen.running and screen.result is None
        assert any("no TileGym checkout attached" in str(n.message) for n in app._notifications)
        titles = [t for t, _, _ in available_commands(app, screen)]
        assert "view: checks" in titles and "checks: run TileGym checks" not in titles


def _blocking_runner(
    started: threading.Event, release: threading.Event
) -> Callable[[Callable[[], bool]], Any]:
    """SYNTHETIC runner: waits until released or cancelled (stands in for a slow child process)."""

    def run(cancelled: Callable[[], bool]) -> ChecksResult:
        started.set()
        while not release.wait(0.02):
            if cancelled():
                return ChecksResult((), cancelled=True)
        return ChecksResult((CheckItem("precondition", "OK", "synthetic"),))

    return run


async def test_run_shows_loading_offers_cancel_and_cancel_stops_waiting(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()
    data = make_data()
    data.tilegym = tmp_path
    data.run_checks = _blocking_runner(started, release)
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("5")
        await until(pilot, lambda: _checks_shown(app), "5 opens the Checks screen")
        screen = app.screen
        assert isinstance(screen, ChecksScreen)
        titles = [t for t, _, _ in available_commands(app, screen)]
        assert "checks: run TileGym checks" in titles and "checks: cancel" not in titles
        await pilot.press("r")
        await until(pilot, lambda: screen.running, "r starts the checks")
        assert started.wait(5)
        assert screen.running and not screen.query_one("#checks-loading").has_class("hidden")
        titles = [t for t, _, _ in available_commands(app, screen)]
        assert "checks: cancel" in titles and "checks: run TileGym checks" not in titles
        await pilot.press("escape")
        await until(pilot, lambda: not screen.running, "Escape cancels the checks")
        await app.workers.wait_for_complete()
        assert not screen.running and screen.result is None
        assert screen.query_one("#checks-loading").has_class("hidden")
        assert "cancelled" in str(screen.query_one("#checks-status").render())
        # a second run after the cancel completes and is shown
        release.set()
        await pilot.press("r")
        await until(pilot, lambda: screen.result is not None, "the second run's result is shown")
        await app.workers.wait_for_complete()
        assert screen.result is not None and screen.result.items[0].title == "synthetic"


async def test_an_unexpected_worker_error_opens_a_modal_not_a_crash(tmp_path: Path) -> None:
    def broken(cancelled: Callable[[], bool]) -> ChecksResult:
        raise RuntimeError("synthetic failure inside the checks")

    data = make_data()
    data.tilegym = tmp_path
    data.run_checks = broken
    app = make_app(data, prewarm=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("5", "r")
        await until(pilot, lambda: isinstance(app.screen, ErrorModal), "the worker's error opens a modal")
        await app.workers.wait_for_complete()
        assert isinstance(app.screen, ErrorModal)
        assert "synthetic failure" in app.screen.error_text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ChecksScreen), "Escape closes the modal")
        assert isinstance(app.screen, ChecksScreen) and not app.screen.running
    assert app.return_code in (None, 0)


def test_render_keeps_brackets_literal_and_orders_sections() -> None:
    items = [
        CheckItem("audit", "FINDING", "[canary_hot_path] x", location="a.py:3"),
        CheckItem("precondition", "OK", "imports"),
        CheckItem("kselect", "OK", "same", detail="test_perf[cutile_rs-2-False]"),
    ]
    text = render_items(items).plain
    assert text.index("E precondition") < text.index("-k selection") < text.index("wrapper audit")
    assert "[canary_hot_path]" in text and "test_perf[cutile_rs-2-False]" in text


def test_loader_attaches_the_checks_only_with_a_tilegym_checkout(tmp_path: Path) -> None:
    pytest.importorskip("cutile_workbench.artifacts.workspace")
    from cutile_workbench.tui.loaders import load_app_data

    root = _tree(tmp_path)
    out = tmp_path / "out"
    (out / "bmm").mkdir(parents=True)
    with_tg = load_app_data("bmm", out_root=out, tilegym=root, env={})
    assert with_tg.tilegym == root and with_tg.run_checks is not None
    without = load_app_data("bmm", out_root=out, tilegym=None, env={})
    assert without.tilegym is None and without.run_checks is None
