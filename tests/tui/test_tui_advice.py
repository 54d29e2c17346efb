"""Every command line a TUI screen shows as advice works when pasted (issue 36 item 5).

Each test opens the app through its real loader on a REAL recorded H200 session copied to a temp out
root (so a line that forgets ``--out-root`` lands on the shipped session instead, and the test sees
it), reads the line off the screen and runs it through the CLI. Lines that open the TUI run through
its loader (``run_app`` with the drawing left out: no terminal here). ``DIR`` (the user's TileGym
checkout) becomes the TileGym snapshot. A line that needs a GPU must stop at its refusal (exit 2)
on this GPU-less box, never crash.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from pilot_wait import settle, until
from textual.widgets import Static
from tilegym_snapshot import needs_test_files

from cutile_workbench.cli import main
from cutile_workbench.tui.app import make_app
from cutile_workbench.tui.loaders import load_app_data
from cutile_workbench.tui.screens.checks import ChecksScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen

ROOT = Path(__file__).resolve().parents[2]
SESSION = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session"
TILEGYM = ROOT / ".fetched" / "TileGym"
needs_tilegym = needs_test_files()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUTILE_KERNEL_OUT_ROOT", raising=False)
    monkeypatch.delenv("TILEGYM_PATH", raising=False)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path | None, Path | None]]:
    """``run_app`` loads the workspace exactly as the TUI does, then returns instead of drawing."""
    import cutile_workbench.tui.app as app_module

    seen: list[tuple[str, Path | None, Path | None]] = []

    def load_only(kernel: str, *, out_root: Path | None, tilegym: Path | None, **_kw: object) -> int:
        data = load_app_data(kernel, out_root=out_root, tilegym=tilegym)
        seen.append((data.kernel, data.out_root, data.tilegym))
        return 0

    monkeypatch.setattr(app_module, "run_app", load_only)
    return seen


def _copy(kernel: str, tmp_path: Path) -> Path:
    root = tmp_path / "out"
    shutil.copytree(SESSION / kernel, root / kernel)
    return root


def _cli(line: str) -> list[str]:
    words = shlex.split(line.replace(" DIR", f" {TILEGYM}"))
    assert words[0] == "cutile-workbench", line
    return words[1:]


def _no_gpu() -> None:
    from cutile_workbench.services.runs import gpu_probe

    if gpu_probe(sys.executable)[0]:
        pytest.skip("a GPU is visible here: the pasted line would start GPU work")


@needs_tilegym
async def test_the_timelines_probe_hint_probes_this_kernel_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_gpu()
    root = _copy("silu_and_mul", tmp_path)
    app = make_app(load_app_data("silu_and_mul", out_root=root, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the Timeline")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TimelineScreen) and screen.row is not None
        params = screen.row.params
        hint = str(screen.query_one("#probe-title", Static).render())
    m = re.search(r"(cutile-workbench probe .+)$", hint)
    assert m and f"--out-root {root}" in m.group(1), hint
    assert main(_cli(m.group(1))) == 2
    out, err = capsys.readouterr()
    # planned on this kernel dir's row, then refused to run here (no ncu, no GPU), printing its lines
    assert f"probe silu_and_mul {params}" in out and "error: cannot run the probe here" in err, (out, err)


@needs_tilegym
async def test_the_checks_screens_no_tilegym_advice_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    opened: list[tuple[str, Path | None, Path | None]],
) -> None:
    root = _copy("matmul", tmp_path)
    app = make_app(load_app_data("matmul", out_root=root, tilegym=None, env={}), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await until(pilot, lambda: isinstance(app.screen, ChecksScreen), "the Checks screen")
        body = str(app.screen.query_one("#checks-body", Static).render())
    lines = [ln.strip() for ln in body.splitlines() if "cutile-workbench" in ln]
    assert len(lines) == 5, body
    for line in lines:
        command = re.split(r"\s{2,}", line)[0]  # the description follows after two spaces
        if command.startswith("export TILEGYM_PATH=DIR; "):
            monkeypatch.setenv("TILEGYM_PATH", str(TILEGYM))
            command = command.split("; ", 1)[1]
        args = _cli(command)
        rc = main(args)
        out, err = capsys.readouterr()
        monkeypatch.delenv("TILEGYM_PATH", raising=False)
        assert "internal error" not in err and "Traceback" not in err, (command, err)
        if args[0] == "matmul":  # opens the TUI on this kernel dir, with the checkout attached
            assert rc == 0 and opened[-1] == ("matmul", root, TILEGYM), (command, opened)
        else:  # the TileGym-side checks: a verdict (this box has no torch: BLOCKED / collection failed)
            assert rc in (0, 1), (command, out, err)
            assert "error: key" not in err, (command, err)
    shown = capsys.readouterr()
    assert shown.err == ""
    kselect = next(ln for ln in lines if "kselect" in ln)
    assert f"--out-root {root}" in kselect


@needs_tilegym
async def test_the_checks_cli_twins_run_on_the_same_kernel_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The REAL TileGym snapshot (copied: a twin may apply the wiring edit) attached to a copy of the
    REAL recorded matmul session: every 'CLI twin' the Checks screen shows after r runs, and reads this
    kernel dir's analysis.json (not the shipped session's)."""
    root = _copy("matmul", tmp_path)
    tilegym = tmp_path / "TileGym"
    shutil.copytree(TILEGYM, tilegym)
    app = make_app(load_app_data("matmul", out_root=root, tilegym=tilegym, env={}), prewarm=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("5")
        await until(pilot, lambda: isinstance(app.screen, ChecksScreen), "the Checks screen")
        await pilot.press("r")
        await until(pilot, lambda: app.screen.result is not None, "the checks' results")  # type: ignore[attr-defined]
        shown = app.screen.panel.plain()  # type: ignore[attr-defined]
    twins = list(dict.fromkeys(re.findall(r"CLI twin: \$ (.+)$", shown, re.M)))
    assert {shlex.split(t)[1] for t in twins} >= {"check", "kselect", "audit-wrapper"}, shown
    for twin in twins:
        assert f"--out-root {root}" in twin, twin
        rc = main(_cli(twin.replace("ANALYSIS.json", str(root / "matmul" / "reference" / "analysis.json"))))
        out, err = capsys.readouterr()
        assert rc in (0, 1) and "internal error" not in err and "error: key" not in err, (twin, rc, err)
        if " kselect " in twin:  # the -k expressions come from this kernel dir's analysis.json
            assert f"# {root / 'matmul' / 'reference' / 'analysis.json'}" in out, out
