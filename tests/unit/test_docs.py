"""The README and docs/ cannot go stale (issue 36): every command, flag and key they name exists.

Checked against the app itself: the argparse tree ``--help`` is built from (every sub-command's own
flags), the pytest plugin's options, the keymap's default bindings and the package's kernels. Also:
the README is short (≤ 150 lines), keeps the test command exactly where ``.ci/run`` extracts it,
links each docs/ page exactly once, and nothing in them points outside this repository.
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from cutile_workbench.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

#: flags of other programs the docs name, each with where it belongs (no workbench flag may hide here)
FOREIGN_FLAGS = {
    "--collect-only": "pytest",
    "--print-record": "TileGym's conftest (the plugin never registers it)",
    "--timeout": "TileGym's pytest-timeout (also run's own)",
    "--snapshot-update": "pytest-textual-snapshot",
    "--release": "cargo build",
    "--manifest-path": "cargo build",
    "--array": "sbatch",
    "--index-url": "pip",
    "--without-pip": "python -m venv",
    "--version": "tileiras / ptxas / cutile-workbench",
}
GLOBAL_WITH_VALUE = ("--out-root", "--tilegym", "--keymap")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _code_spans(text: str) -> list[str]:
    """Inline code spans and the lines of fenced blocks."""
    spans: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            spans.append(line)
        else:
            spans.extend(re.findall(r"`([^`]+)`", line))
    return spans


def _sub_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


@pytest.fixture(scope="module")
def cli() -> argparse.ArgumentParser:
    return build_parser()


def _all_flags(cli: argparse.ArgumentParser) -> set[str]:
    flags = _options(cli)
    for sub in _sub_parsers(cli).values():
        flags |= _options(sub)
        for stage in _sub_parsers(sub).values():
            flags |= _options(stage)
    plugin = (ROOT / "cutile_workbench" / "run" / "plugins" / "perflog.py").read_text(encoding="utf-8")
    flags |= set(re.findall(r'addoption\(\s*"(--[a-z0-9-]+)"', plugin))
    return flags


def _known_kernels() -> set[str]:
    from cutile_workbench.services.kernels import list_kernels

    return {e.name for e in list_kernels(out_root=None, tilegym=None).entries}


def _command_lines(path: Path) -> list[str]:
    """Every ``cutile-workbench …`` command the page names (cli.md's table: its first column too)."""
    lines: list[str] = []
    for span in _code_spans(path.read_text(encoding="utf-8")):
        for m in re.finditer(r"(?:^|[\s(/])(?:\.venv/bin/)?cutile-workbench((?:\s+[^#;&]*)?)", span):
            lines.append(m.group(1).strip())
    if path.name == "cli.md":
        for row in re.findall(r"^\| `([a-z][^`]*)` \|", path.read_text(encoding="utf-8"), re.MULTILINE):
            if not row.startswith("cutile-workbench"):
                lines.append(row)
    return lines


def _words_and_flags(line: str) -> tuple[list[str], list[str]]:
    """The command path (positionals before the first flag that is not a global ``--x VALUE``) and every flag."""
    tokens = line.replace("\\|", " | ").replace("[", " ").replace("]", " ").split()
    words: list[str] = []
    flags: list[str] = []
    in_path = True
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--"):
            flags.extend(FLAG.findall(tok))
            if tok in GLOBAL_WITH_VALUE:
                i += 2
                continue
            in_path = False
        elif in_path and tok != "|":
            words.append(tok)
        i += 1
    return words, flags


def test_readme_is_short_and_keeps_the_ci_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    cmd = subprocess.run(
        ["awk", "/<!-- test-command -->/{getline; while ($0 ~ /^```/) getline; print; exit}", str(README)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert cmd.startswith('python3 -m venv .venv && .venv/bin/pip install -q -e ".[dev]"') and "pytest" in cmd
    first = re.search(r"```\n(python3 -m venv .venv[^\n]*cutile-workbench matmul)\n```", text)
    assert first is not None, "the first set-up command opens cutile-workbench on the embedded default"


def test_each_docs_page_is_linked_once_and_nothing_points_outside_the_repo() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)\)", text)
    assert sorted(links) == sorted(f"docs/{p.name}" for p in DOCS), links
    for page in PAGES:
        body = page.read_text(encoding="utf-8")
        assert "shared/" not in body, f"{page.name} names a file outside this repository"
        assert "../" not in body, f"{page.name} names a file outside this repository"
        for target in re.findall(r"\]\(([^)#:]+)\)", body):
            assert (page.parent / target).exists(), f"{page.name} links {target}, which does not exist"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_and_its_flags_exist(page: Path, cli: argparse.ArgumentParser) -> None:
    subs = _sub_parsers(cli)
    kernels = _known_kernels()
    global_flags = _options(cli)
    for line in _command_lines(page):
        words, flags = _words_and_flags(line)
        if not words:
            assert set(flags) <= global_flags, (page.name, line)
            continue
        head = words[0]
        if head in subs:
            parsers = [subs[head]]
            stages = _sub_parsers(subs[head])
            if stages and len(words) > 1:
                names = words[1].split("|")
                assert all(n in stages for n in names), (page.name, line)
                parsers = [stages[n] for n in names]
        else:  # a bare kernel: it must be one the app knows, or a placeholder
            assert head in kernels or head.startswith("<") or head.isupper(), (page.name, line)
            parsers = [subs["open"]]
        for p in parsers:
            unknown = [f for f in flags if f not in _options(p) | global_flags]
            assert not unknown, (
                f"{page.name}: `cutile-workbench {line}` names {unknown}, which it does not have"
            )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_flag_named_anywhere_exists(page: Path, cli: argparse.ArgumentParser) -> None:
    known = _all_flags(cli) | set(FOREIGN_FLAGS)
    named = {f for span in _code_spans(page.read_text(encoding="utf-8")) for f in FLAG.findall(span)}
    assert not (named - known), f"{page.name} names flags no command has: {sorted(named - known)}"


#: how the README writes a key → Textual's key name
KEY_NAMES = {"/": "slash", "+": "plus", "-": "minus", "←": "left", "→": "right", "Tab": "tab", "F1": "f1"}
KEY_NAMES.update({"Ctrl+Q": "ctrl+q", "Ctrl+P": "ctrl+p"})
#: the README's screens → the binding owners of each (``cutile-workbench keys``)
SCREEN_OWNERS = {
    "Ratios": ("RatiosScreen", "RatioTable"),
    "Timeline": ("TimelineScreen", "LaunchTimeline"),
    "IR diff": ("IRDiffScreen", "IRDiffView"),
    "Report": ("ReportScreen",),
    "Checks": ("ChecksScreen",),
    "History": ("HistoryScreen",),
}


def _bindings() -> dict[str, set[str]]:
    """owner → its default keys, from the keymap's own listing."""
    import cutile_workbench.tui.app  # noqa: F401  (declares the app's bindings)
    from cutile_workbench.tui.catalog import describe_bindings

    owners: dict[str, set[str]] = {}
    for line in describe_bindings().splitlines()[1:]:
        parts = line.split(None, 2)
        if len(parts) == 3:
            owner = parts[2].split(":")[0]
            owners.setdefault(owner, set()).update(parts[1].split(","))
    return owners


def test_the_readme_key_table_names_only_bound_keys() -> None:
    from textual.app import App

    owners = _bindings()
    app_keys = owners["WorkbenchApp"] | {App.COMMAND_PALETTE_BINDING}
    text = README.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\d)` ([A-Za-z ]+?) \| [^|]+ \| ([^|]+) \|$", text, re.MULTILINE)
    assert [r[1] for r in rows] == list(SCREEN_OWNERS)
    for digit, screen, keys in rows:
        assert digit in app_keys, screen
        bound = set().union(*(owners[o] for o in SCREEN_OWNERS[screen]))
        for key in re.findall(r"`([^`]+)`", keys):
            assert KEY_NAMES.get(key, key) in bound, f"README: {screen} key {key!r} is not bound there"
    intro = text[text.index("## Screens and keys") : text.index("| screen |")]
    for key in re.findall(r"`([^`]+)`", intro):
        if not key.startswith("cutile-workbench") and not key.startswith("--"):
            assert KEY_NAMES.get(key, key) in app_keys, f"README: app key {key!r} is not bound"


def test_the_docs_name_every_command_and_every_cli_and_service_module() -> None:
    from cutile_workbench.cli import COMMAND_INDEX

    cli_md = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    first_column = re.findall(r"^\| `(?:cutile-workbench )?([<a-z][^`]*)` \|", cli_md, re.MULTILINE)
    for cmd in COMMAND_INDEX:
        spelled = f"{cmd.group} {cmd.name}" if cmd.group else cmd.name
        assert any(row.startswith(spelled) for row in first_column) or (
            cmd.name == "open" and any(row.startswith("<kernel>") for row in first_column)
        ), f"docs/cli.md has no row for {spelled}"
    arch = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for folder in ("cli", "services"):
        for module in sorted((ROOT / "cutile_workbench" / folder).glob("*.py")):
            if module.stem != "__init__":
                assert f"`{module.stem}`" in arch, (
                    f"docs/architecture.md does not name {folder}/{module.name}"
                )


#: docs/tui.md's key phrases per screen paragraph → the binding ids they name. Each phrase must be in
#: that screen's paragraph, word for word, and each key in it a default key of the binding, owned by the
#: screen (or the app): a key moved in the keymap, or a phrase that names the wrong key, fails here.
TUI_DOC_KEYS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "1 Ratios": (
        ("(v)", "ratios-variant", ("v",)),
        ("(/, o slow-only)", "ratios-filter", ("slash",)),
        ("(/, o slow-only)", "ratios-slow", ("o",)),
        ("s/r sort", "ratios-sort", ("s",)),
        ("s/r sort", "ratios-reverse", ("r",)),
        ("c chart", "ratios-chart", ("c",)),
        ("t (or Enter) timeline", "ratios-timeline", ("t",)),
        ("L re-run live", "ratios-live", ("L",)),
        ("R re-run the shown configs sharded over the GPUs", "ratios-sharded", ("R",)),
    ),
    "2 Timeline": (
        ("0 toggles", "timeline-fit", ("0",)),
        ("+/- zoom", "timeline-zoom-in", ("plus",)),
        ("+/- zoom", "timeline-zoom-out", ("minus",)),
        ("←/→ pan", "timeline-pan-left", ("left",)),
        ("←/→ pan", "timeline-pan-right", ("right",)),
        ("↑/↓ lane", "timeline-lane-up", ("up",)),
        ("↑/↓ lane", "timeline-lane-down", ("down",)),
        ("Tab next launch", "timeline-next", ("tab",)),
    ),
    "3 IR diff": (
        ("n/N hunks", "irdiff-next-hunk", ("n",)),
        ("n/N hunks", "irdiff-prev-hunk", ("N",)),
        ("z folds", "irdiff-fold", ("z",)),
        ("/ search both panes", "irdiff-search", ("slash",)),
        ("(. , next/prev match)", "irdiff-next-match", ("full_stop",)),
        ("(. , next/prev match)", "irdiff-prev-match", ("comma",)),
        ("a audit panel", "irdiff-focus", ("a",)),
        ("p next pair", "irdiff-pair", ("p",)),
    ),
    "4 Report": (
        ("e / f plan a report set", "report-plan-e", ("e",)),
        ("e / f plan a report set", "report-plan-f", ("f",)),
        ("v rendered / raw / diff", "report-view", ("v",)),
        ("PgUp/PgDn", "report-page-up", ("pageup",)),
        ("PgUp/PgDn", "report-page-down", ("pagedown",)),
        ("Home/End scroll the preview", "report-top", ("home",)),
        ("Home/End scroll the preview", "report-bottom", ("end",)),
        ("/ search (n next match)", "report-search", ("slash",)),
        ("/ search (n next match)", "report-next-match", ("n",)),
        ("w write", "report-write", ("w",)),
        ("D plans F", "report-demonstrate", ("D",)),
    ),
    "5 Checks": (("r runs the E precondition", "checks-run", ("r",)),),
    "6 History": (("c config", "history-config", ("c",)), ("b backend", "history-backend", ("b",))),
    "F1 help": (
        ("F1 help", "app-help", ("f1",)),
        ("i the whole header", "app-info", ("i",)),
        ("Ctrl+Q quit", "app-quit", ("ctrl+q",)),
    ),
}
#: the binding owners of each docs/tui.md paragraph (besides the app's own)
TUI_DOC_OWNERS = {
    "1 Ratios": SCREEN_OWNERS["Ratios"],
    "2 Timeline": SCREEN_OWNERS["Timeline"],
    "3 IR diff": SCREEN_OWNERS["IR diff"],
    "4 Report": SCREEN_OWNERS["Report"],
    "5 Checks": SCREEN_OWNERS["Checks"],
    "6 History": SCREEN_OWNERS["History"],
    "F1 help": ("WorkbenchApp",),
}


def _tui_doc_paragraphs() -> dict[str, str]:
    text = (ROOT / "docs/tui.md").read_text(encoding="utf-8")
    block = text[text.index("```\n") + 4 : text.rindex("```")]
    out: dict[str, str] = {}
    for part in re.split(r"\n  (?=\d [A-Z]|F1 )", block):
        flat = " ".join(ln.strip() for ln in part.split("\n"))
        for head in TUI_DOC_KEYS:
            if flat.startswith(head):
                out[head] = flat
    return out


def test_every_key_phrase_of_docs_tui_is_bound_as_it_says() -> None:
    import cutile_workbench.tui.app  # noqa: F401  (declares the app's bindings)
    from cutile_workbench.tui.catalog import describe_bindings

    by_id: dict[str, tuple[set[str], str]] = {}
    for line in describe_bindings().splitlines()[1:]:
        parts = line.split(None, 2)
        if len(parts) == 3:
            by_id[parts[0]] = (set(parts[1].split(",")), parts[2].split(":")[0])
    paragraphs = _tui_doc_paragraphs()
    assert set(paragraphs) == set(TUI_DOC_KEYS), sorted(set(TUI_DOC_KEYS) - set(paragraphs))
    for head, phrases in TUI_DOC_KEYS.items():
        for phrase, binding, keys in phrases:
            assert phrase in paragraphs[head], f"docs/tui.md ({head}) no longer says {phrase!r}"
            assert binding in by_id, f"docs/tui.md ({head}): no binding {binding!r}"
            bound, owner = by_id[binding]
            assert owner in (*TUI_DOC_OWNERS[head], "WorkbenchApp"), (head, binding, owner)
            for key in keys:
                assert key in bound, (
                    f"docs/tui.md ({head}) says {phrase!r}: {binding} is bound to {sorted(bound)}"
                )
