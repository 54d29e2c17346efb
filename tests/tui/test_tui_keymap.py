"""User keymap: file discovery, validation (file/line/key in every problem), and Pilot runs of the app.

The keymap files are SYNTHETIC (written by each test); the app data is the synthetic
``tui_helpers.make_data()``. The Pilot tests press real keys through Textual's binding chain and
wait for the state they assert (``pilot_wait``), never for a fixed pause (issue #35).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_wait import key_handled, until
from textual.binding import Binding
from tui_helpers import make_data

from cutile_workbench.cli import _rewrite_bare_kernel, build_parser
from cutile_workbench.tui.app import WorkbenchApp, make_app
from cutile_workbench.tui.catalog import known_bindings
from cutile_workbench.tui.keymap import (
    ENV_VAR,
    QUIT_KEY,
    LoadedKeymap,
    load_keymap,
    normalize_keys,
    parse_keymap,
)
from cutile_workbench.tui.modals import HelpScreen
from cutile_workbench.tui.screens.ratios import RatiosScreen
from cutile_workbench.tui.screens.report import ReportScreen
from cutile_workbench.tui.screens.timeline import TimelineScreen

KNOWN = known_bindings()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keymap.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _messages(app: WorkbenchApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


# ---------------------------------------------------------------- discovery


def test_explicit_file_wins_over_env_and_default(tmp_path: Path) -> None:
    flag = _write(tmp_path, '[keymap]\napp-help = "f2"\n')
    env_file = tmp_path / "env.toml"
    env_file.write_text('[keymap]\napp-help = "f3"\n')
    home = tmp_path / "home"
    (home / ".config/cutile-workbench").mkdir(parents=True)
    (home / ".config/cutile-workbench/keymap.toml").write_text('[keymap]\napp-help = "f4"\n')
    env = {ENV_VAR: str(env_file), "HOME": str(home)}
    assert load_keymap(flag, environ=env, known=KNOWN).bindings == {"app-help": "f2"}
    assert load_keymap(None, environ=env, known=KNOWN).bindings == {"app-help": "f3"}
    assert load_keymap(None, environ={"HOME": str(home)}, known=KNOWN).bindings == {"app-help": "f4"}


def test_no_file_anywhere_is_silent_but_a_named_missing_file_is_a_problem(tmp_path: Path) -> None:
    quiet = load_keymap(None, environ={"HOME": str(tmp_path)}, known=KNOWN)
    assert quiet == LoadedKeymap(None) and not quiet.problems
    missing = tmp_path / "nope.toml"
    for loaded in (
        load_keymap(missing, environ={}, known=KNOWN),
        load_keymap(None, environ={ENV_VAR: str(missing)}, known=KNOWN),
    ):
        assert not loaded.bindings
        assert [str(p) for p in loaded.problems] == [f"{missing}: keymap file not found"]


# ---------------------------------------------------------------- validation


def test_malformed_toml_names_the_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, '[keymap]\napp-help = "f2"\napp-report = f4\n')
    loaded = load_keymap(path, environ={}, known=KNOWN)
    assert not loaded.bindings
    (problem,) = loaded.problems
    assert problem.line == 3 and str(problem).startswith(f"{path}:3: malformed TOML")


def test_bad_entries_are_reported_with_line_and_key_and_good_ones_kept(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "# my keys",
            "[keymap]",
            'app-help = "f2"',
            'app-hlep = "f3"',
            'app-report = "ctrl+nope"',
            "ratios-filter = 7",
            'report-write = "W, ctrl+w"',
            "",
        ]
    )
    loaded = parse_keymap(text, Path("k.toml"), KNOWN)
    assert loaded.bindings == {"app-help": "f2", "report-write": "W,ctrl+w"}
    found = {(p.line, p.key): p.message for p in loaded.problems}
    assert set(found) == {(4, "app-hlep"), (5, "app-report"), (6, "ratios-filter")}
    assert "unknown binding id (did you mean 'app-help'?)" in found[(4, "app-hlep")]
    assert "invalid key 'ctrl+nope'" in found[(5, "app-report")]
    assert "must be a string" in found[(6, "ratios-filter")]


def test_ctrl_q_can_neither_be_taken_nor_removed_from_quit() -> None:
    text = '[keymap]\napp-quit = "ctrl+x"\napp-help = "f2, Ctrl+Q"\nchecks-run = "ctrl+q"\n'
    loaded = parse_keymap(text, Path("k.toml"), KNOWN)
    assert loaded.bindings == {"app-quit": "ctrl+x,ctrl+q", "app-help": "f2"}
    assert [(p.line, p.key) for p in loaded.problems] == [(3, "app-help"), (4, "checks-run")]
    assert all("reserved for quit" in p.message for p in loaded.problems)


def test_a_key_taken_from_a_sibling_binding_is_a_warning_but_applied() -> None:
    loaded = parse_keymap('[keymap]\napp-help = "2"\n', Path("k.toml"), KNOWN)
    assert loaded.bindings == {"app-help": "2"}
    (problem,) = loaded.problems
    assert problem.key == "app-help" and "also a key of 'app-timeline'" in problem.message
    # moving the sibling away too is a clean swap
    swap = parse_keymap('[keymap]\napp-help = "2"\napp-timeline = "f2"\n', Path("k.toml"), KNOWN)
    assert not swap.problems


@pytest.mark.parametrize(
    ("value", "keys"),
    [
        ("?", ["question_mark"]),
        ("ctrl+t", ["ctrl+t"]),
        ("shift+tab", ["shift+tab"]),
        ("f12", ["f12"]),
        ("alt+ctrl+x", ["ctrl+alt+x"]),
        ("slash,/", ["slash"]),
        ("G", ["G"]),
        ("escape", ["escape"]),
    ],
)
def test_valid_keys_normalize_to_textual_names(value: str, keys: list[str]) -> None:
    assert normalize_keys(value) == (keys, [])


@pytest.mark.parametrize("value", ["", "ctrl+", "hyperx+a", "ctrl+ctrl+a", "enterr", "a,,b", " "])
def test_invalid_keys_are_rejected(value: str) -> None:
    assert normalize_keys(value)[1]


def test_binding_ids_are_unique_and_every_workbench_binding_has_one() -> None:
    from textual.dom import DOMNode

    import cutile_workbench.tui.overview_app  # noqa: F401  (its classes are walked below too)

    seen: dict[str, str] = {}
    stack: list[type] = [DOMNode]
    classes: set[type] = set()
    while stack:
        cls = stack.pop()
        if cls not in classes:
            classes.add(cls)
            stack.extend(cls.__subclasses__())
    for cls in classes:
        if not cls.__module__.startswith(("cutile_workbench.", "cutile_workbench.tui.widgets.")):
            continue
        for b in cls.__dict__.get("BINDINGS", ()):
            assert isinstance(b, Binding) and b.id, f"{cls.__name__}: {b!r} has no id"
            assert seen.setdefault(b.id, cls.__name__) == cls.__name__, f"id {b.id} declared twice"
    assert set(seen) == set(KNOWN) and QUIT_KEY in KNOWN["app-quit"].keys


def test_cli_keymap_flag_in_either_position() -> None:
    parser = build_parser()
    for argv in (
        ["--keymap", "k.toml", "bmm"],
        ["bmm", "--keymap", "k.toml"],
        ["open", "bmm", "--keymap", "k.toml"],
    ):
        args = parser.parse_args(_rewrite_bare_kernel(parser, argv))
        assert (args.command, args.kernel, args.keymap) == ("open", "bmm", "k.toml"), argv


# ---------------------------------------------------------------- the app


async def test_a_remap_moves_the_key() -> None:
    keymap = parse_keymap('[keymap]\napp-report = "f4"\napp-help = "f2"\n', Path("k.toml"), KNOWN)
    app = make_app(make_data(), prewarm=False, keymap=keymap)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "the Ratios screen first")
        await pilot.press("4")  # the old key does nothing now
        await key_handled(pilot)
        assert isinstance(app.screen, RatiosScreen)
        await pilot.press("f4")
        await until(pilot, lambda: isinstance(app.screen, ReportScreen), "F4 opens the Report")
        assert isinstance(app.screen, ReportScreen)
        await pilot.press("2")  # untouched bindings keep their keys
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "2 opens the Timeline")
        assert isinstance(app.screen, TimelineScreen)
        await pilot.press("f1")
        await key_handled(pilot)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "F2 opens the help")
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        # F1 help lists the keys in effect: the remapped ones, not the defaults
        keys = {d: k for k, d, _ in help_screen.keys}
        assert keys["Help"] == "F2" and keys["Report"] == "F4"  # as typed (issue #20)
        assert "Keymap: k.toml (2 binding(s) remapped" in help_screen.about
        assert not _messages(app)


async def test_a_remap_can_keep_the_old_key() -> None:
    keymap = parse_keymap('[keymap]\napp-report = "4,f4"\n', Path("k.toml"), KNOWN)
    app = make_app(make_data(), prewarm=False, keymap=keymap)
    async with app.run_test(size=(120, 40)) as pilot:
        for key, cls in (("4", ReportScreen), ("1", RatiosScreen), ("f4", ReportScreen)):
            await pilot.press(key)
            await until(pilot, lambda cls=cls: isinstance(app.screen, cls), f"{key} opens {cls.__name__}")
            assert isinstance(app.screen, cls), key


async def test_a_bad_file_is_a_notification_and_the_app_still_works(tmp_path: Path) -> None:
    path = _write(tmp_path, '[keymap]\napp-timeline = "f5"\nno-such-binding = "x"\n[keymap.extra\n')
    keymap = load_keymap(path, environ={}, known=KNOWN)
    app = make_app(make_data(), prewarm=False, keymap=keymap)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: _messages(app), "the keymap problem notified")
        (message,) = _messages(app)
        assert message.startswith(f"{path}:4: malformed TOML")
        await pilot.press("2")  # nothing was remapped: the defaults still work
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "2 opens the Timeline")
        assert isinstance(app.screen, TimelineScreen)
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.return_code is not None, "Ctrl+Q quits")
        assert app._exit


async def test_valid_entries_apply_next_to_a_reported_unknown_id(tmp_path: Path) -> None:
    path = _write(tmp_path, '[keymap]\napp-timeline = "f5"\nno-such-binding = "x"\n')
    app = make_app(make_data(), prewarm=False, keymap=load_keymap(path, environ={}, known=KNOWN))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: _messages(app), "the unknown id notified")
        assert _messages(app) == [
            f"{path}:3: key 'no-such-binding': unknown binding id; F1 lists the keys of each screen"
        ]
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "F5 opens the Timeline")
        assert isinstance(app.screen, TimelineScreen)


@pytest.mark.parametrize(
    "text",
    [
        '[keymap]\napp-quit = "ctrl+x"\n',
        '[keymap]\napp-help = "ctrl+q"\n',
        '[keymap]\nratios-filter = "ctrl+q"\napp-quit = "f10"\n',
    ],
    ids=["quit-remapped", "help-takes-ctrl-q", "screen-key-takes-ctrl-q"],
)
async def test_ctrl_q_survives_any_keymap(text: str) -> None:
    keymap = parse_keymap(text, Path("k.toml"), KNOWN)
    app = make_app(make_data(), prewarm=False, keymap=keymap)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "the Ratios screen first")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: app.return_code is not None, "Ctrl+Q quits")
        assert app._exit


async def test_added_quit_key_also_quits() -> None:
    keymap = parse_keymap('[keymap]\napp-quit = "ctrl+x"\n', Path("k.toml"), KNOWN)
    app = make_app(make_data(), prewarm=False, keymap=keymap)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "the Ratios screen first")
        await pilot.press("ctrl+x")
        await until(pilot, lambda: app.return_code is not None, "Ctrl+X quits")
        assert app._exit


async def test_without_the_ctrl_q_guard_textual_would_lose_quit() -> None:
    """Why the guard exists: Textual's own keymap lets another id take ctrl+q from the app."""
    app = make_app(make_data(), prewarm=False, keymap=LoadedKeymap(Path("k.toml"), {"app-help": "ctrl+q"}))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, RatiosScreen), "the Ratios screen first")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "Ctrl+Q opens the help")
        await key_handled(pilot)
        assert not app._exit and isinstance(app.screen, HelpScreen)


def test_binding_list_names_every_id_with_its_default_keys() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "cutile_workbench", "keys"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:]}
    assert rows == {bid: info.keys for bid, info in KNOWN.items()}
