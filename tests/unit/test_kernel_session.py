"""One KernelSession per kernel dir (issue 30): each log parsed once per command, ``load_e_table`` once,
one config naming for every ``--config``. On the REAL recorded H200 matmul session (copied to a temp
out root); the counting wrappers are the probe of ``bench/read_counts.py``, in process."""

from __future__ import annotations

import contextlib
import io
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from cutile_workbench.cli import main

ROOT = Path(__file__).resolve().parents[2]
MATMUL = ROOT / "cutile_workbench" / "profiles" / "tilegym" / "session" / "matmul"
CAND = "perf_cutile_rs.full.txt"
BASE = "baseline_perf_cutile.txt"
#: a REAL config of the recording, its TUI label (the fields that vary across the six) and a node id
PARAMS = "True-False-False-False-2048-2048-2048-0-0-torch.float16"
NODEID = f"tests/ops/test_matmul.py::Test_Matmul::test_perf[cutile_rs-{PARAMS}]"


@pytest.fixture
def out_root(tmp_path: Path) -> Path:
    shutil.copytree(MATMUL, tmp_path / "out" / "matmul")
    return tmp_path / "out"


@contextlib.contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts whole-log parses (the sanitizer's per-test-block judgements apart) and load_e_table calls."""
    import traceback

    import cutile_workbench.artifacts.perflog.parser as parser
    import cutile_workbench.stages.e.e_table as e_table

    counts: Counter[str] = Counter()
    real_parse, real_load = parser.parse_perf_log, e_table.load_e_table

    def parse(path, *a, **k):  # type: ignore[no-untyped-def]
        if not any(f.filename.endswith("sanitizer.py") for f in traceback.extract_stack()[:-1]):
            counts[f"parse {Path(str(path)).name}"] += 1
        return real_parse(path, *a, **k)

    def load(*a, **k):  # type: ignore[no-untyped-def]
        counts["load_e_table"] += 1
        return real_load(*a, **k)

    monkeypatch.setattr(parser, "parse_perf_log", parse)
    monkeypatch.setattr(e_table, "load_e_table", load)
    yield counts


def _cli(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(list(argv))


@pytest.mark.parametrize(
    "argv",
    [
        ("table",),
        ("table", "--json"),
        ("report", "e", "--dry-run", "--no-real-scripts"),
        ("report", "f", "--dry-run", "--no-real-scripts"),
        ("diff",),
        ("history",),
    ],
)
def test_each_log_parsed_at_most_once_and_e_table_loaded_once_per_command(
    argv: tuple[str, ...], out_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Warm cache (a first run of the command), then counted: before the session `table` parsed the
    candidate log twice and ran load_e_table twice; `report e` parsed it twice more (stand-ins)."""
    where = ("matmul", "--out-root", str(out_root))
    full = (*argv[:2], *where, *argv[2:]) if argv[0] == "report" else (argv[0], *where, *argv[1:])
    assert _cli(*full) in (0, 1)  # warm the user cache (E's table, trust, conditions)
    with counting(monkeypatch) as counts:
        assert _cli(*full) in (0, 1)
    assert counts["load_e_table"] <= 1, counts
    assert counts[f"parse {CAND}"] <= 1 and counts[f"parse {BASE}"] <= 1, counts


def test_the_tui_load_parses_each_log_once(out_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI's load and what its screens pull after the paint (IR pairs, history): one E table."""
    from cutile_workbench.tui.loaders import load_app_data

    load_app_data("matmul", out_root=out_root, tilegym=None)  # warm
    with counting(monkeypatch) as counts:
        data = load_app_data("matmul", out_root=out_root, tilegym=None)
        assert data.ir_loader is not None and data.history_loader is not None
        data.ir_loader()
        data.history_loader()
    assert counts["load_e_table"] <= 1, counts
    assert counts[f"parse {CAND}"] <= 1 and counts[f"parse {BASE}"] <= 1, counts


@pytest.mark.parametrize(
    "spelling",
    [
        PARAMS,  # the full params string
        "False-2048-2048-2048",  # the TUI's label of it (the fields that vary across the six configs)
        NODEID,  # the candidate test's node id
        NODEID.replace("cutile_rs-", "cutile-"),  # the baseline test's node id
        f"test_perf[cutile_rs-{PARAMS}]",  # without the file
    ],
)
def test_every_config_spelling_names_one_config_in_timeline(
    spelling: str, out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 3: the TUI's label and node ids were refused by `timeline` (exit 2) before."""
    import json

    assert main(["timeline", "matmul", "--out-root", str(out_root), "--config", spelling, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {b["params"] for b in doc["backends"]} == {PARAMS}
    assert doc["identity"] is not None  # the config's identity, the same row `table` shows


def test_an_ambiguous_or_unknown_config_lists_the_close_matches(
    out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spelling two configs share is refused naming both; a typo lists close matches (exit 2)."""
    assert main(["timeline", "matmul", "--out-root", str(out_root), "--config", "False-2048-2048-204"]) == 2
    err = capsys.readouterr().err
    assert "close matches" in err and "(label False-2048-2048-2048)" in err and "--config" in err
    from cutile_workbench.stages.session.configs import config_names

    names = config_names([("a-1-x", ""), ("a-1-y", ""), ("b-1-x", "")], labelled=["a-1-x", "b-1-x"])
    assert names.resolve("a") == "a-1-x"  # the Ratios screen's label of a-1-x among the labelled two
    both = config_names([("p-1", "t[p-1]"), ("p-2", "t[p-1]")])  # SYNTHETIC: one node id, two configs
    with pytest.raises(Exception, match="ambiguous: it names 2 configs"):
        both.resolve("t[p-1]")


def test_the_tui_label_names_the_config_in_every_command_that_takes_config(
    out_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 3 across the commands: `diff --config`, `history --config`, `probe --config` (before: no
    --config on diff; history and probe refused the label)."""
    import json

    label, where = "False-2048-2048-2048", ("matmul", "--out-root", str(out_root))
    assert main(["diff", *where, "--config", label, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["config"] == PARAMS
    assert main(["history", *where, "--config", label, "--json"]) == 0
    assert {s["params"] for s in json.loads(capsys.readouterr().out)["series"]} == {PARAMS}
    # probe resolves the config first; the recorded TileGym session then needs the checkout to run it
    assert main(["probe", *where, "--config", label, "--print-command"]) == 2
    err = capsys.readouterr().err
    assert "--tilegym" in err and "unknown config" not in err


@pytest.mark.parametrize("argv", [("table",), ("history",), ("tui",)])
def test_on_a_cold_cache_too_each_log_is_parsed_once(
    argv: tuple[str, ...], out_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty user cache (a first command on a new session): before the session `table` parsed the
    candidate log 5 times and ran load_e_table 3 times (stand-ins, trust and the conditions each
    parsed again); `history` parsed both logs twice (its import, then the stand-ins)."""
    from cutile_workbench.artifacts import derive_cache
    from cutile_workbench.stages.e import e_table

    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(e_table, "_MEMORY", {})
    monkeypatch.setattr(derive_cache, "_DERIVED", {})
    with counting(monkeypatch) as counts:
        if argv[0] == "tui":
            from cutile_workbench.tui.loaders import load_app_data

            data = load_app_data("matmul", out_root=out_root, tilegym=None)
            assert data.ir_loader is not None and data.history_loader is not None
            data.ir_loader()
            data.history_loader()
        else:
            assert _cli(argv[0], "matmul", "--out-root", str(out_root)) == 0
    assert counts["load_e_table"] <= 1, counts
    assert counts[f"parse {CAND}"] == 1 and counts[f"parse {BASE}"] == 1, counts


def test_a_quick_table_leaves_the_row_records_underived_and_the_default_table_keys_them(
    out_root: Path,
) -> None:
    """Issue 31 item 3: the quick first screen (``table(n_boot=0)`` and the candidate backend) derives
    no row records (their first derivation encodes every record into the cache: ~1 s at 1,000
    configs); once the default table is built, what is keyed on an E table (the row records' cache
    entry) is keyed on the default one, the one the CLI finds, though ``n_boot=0``'s came first."""
    from cutile_workbench.services.session import open_session

    session = open_session("matmul", out_root=out_root, tilegym=None, env={}, strict=False, require_dir=False)
    session.table(n_boot=0)
    assert session.candidate_backend() == "cutile-rs"
    assert "row_records" not in {k for k, _ in session._facts()}
    default = session.e_table()
    assert session.any_e_table() is default
    session.forget_table(n_boot=0)
    assert {k for k, _ in session._facts() if isinstance(k, tuple)} >= {("e_table", 0, 2000)}
    assert not any(isinstance(k, tuple) and k[1:] == (0, 0) for k, _ in session._facts())


def test_a_warm_quick_table_leaves_the_row_records_underived_too(out_root: Path) -> None:
    """The same on a warm cache (the quick table from the cache: no log parsed): one candidate
    framework kept with the cached table names the backend, no row records decoded (~1 s on the GPU
    node at 1,000 configs, measured: a warm quick first screen showed later than a fresh one)."""
    from cutile_workbench.services.session import open_session

    def quick() -> tuple[str | None, set[object]]:
        session = open_session(
            "matmul", out_root=out_root, tilegym=None, env={}, strict=False, require_dir=False
        )
        session.table(n_boot=0)
        return session.candidate_backend(), {k for k, _ in session._facts()}

    first, _ = quick()
    again, facts = quick()
    assert first == again == "cutile-rs"
    assert "row_records" not in facts
