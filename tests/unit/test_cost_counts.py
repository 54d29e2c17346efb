"""Issue 31: the work each command does is counted, not timed (these hold on any box).

Sessions: the REAL recorded H200 matmul session (6 configs) replicated to N configs by
``bench/scale_cost.py``'s builder (each replica one of the real configs, its test blocks, analysis
entries and launch sets copied with a distinct params string), and "one config changed" by the same
file's :func:`rerecord_config` (that config's samples re-recorded in both logs, its capture members
rewritten; every other byte kept). What is counted:

- launch-set decodes (``LaunchStore._payload``: one gzip member decompressed and validated),
- perf-log parses (``parser._parse``), per log file,
- per-config trust derivations (``trust._derive_config``) and kernel-level trust assemblies.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import scale_cost  # noqa: E402

N = 40  # > the store's decoded-set cache (64 sets = 32 configs): a second decode pass is visible


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("CUTILE_WORKBENCH_CACHE", str(tmp_path / "user-cache"))  # a fresh cache
    _forget_process_memos()
    kdir, config = scale_cost.build_session(tmp_path / "out", N)
    return kdir, config


def _forget_process_memos() -> None:
    """What a new process starts with: nothing derived in memory."""
    from cutile_workbench.artifacts import config_cache, derive_cache, events
    from cutile_workbench.artifacts.perflog import parser
    from cutile_workbench.stages.e import e_table

    derive_cache._DERIVED.clear()
    e_table._MEMORY.clear()
    getattr(parser, "_MEMO", {}).clear()
    config_cache.forget()
    getattr(events, "forget", lambda: None)()
    try:
        from cutile_workbench.artifacts.perflog import index
    except ImportError:  # before the perf-log index
        return
    index.forget()


class Counts:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from cutile_workbench.artifacts import launch_store
        from cutile_workbench.artifacts.perflog import parser
        from cutile_workbench.evidence import trust

        self.decodes: Counter[int] = Counter()
        self.parses: Counter[str] = Counter()
        self.block_parses: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()
        real_payload, real_parse = launch_store.LaunchStore._payload, parser._parse

        def payload(store: Any, i: int) -> bytes:
            self.decodes[i] += 1
            return real_payload(store, i)

        def parse(src: str, text: str | None, *a: Any, **kw: Any) -> Any:
            # a whole log (the sanitizer also parses each record block alone: counted apart)
            whole = text is None or 2 * len(text) > Path(src).stat().st_size
            (self.parses if whole else self.block_parses)[Path(src).name] += 1
            return real_parse(src, text, *a, **kw)

        monkeypatch.setattr(launch_store.LaunchStore, "_payload", payload)
        monkeypatch.setattr(parser, "_parse", parse)
        real_derive = getattr(trust, "_derive_config", None)
        if real_derive is not None:

            def derive(row: Any, *a: Any, **kw: Any) -> Any:
                self.rows[row.params] += 1
                return real_derive(row, *a, **kw)

            monkeypatch.setattr(trust, "_derive_config", derive)

    def reset(self) -> None:
        self.decodes.clear()
        self.parses.clear()
        self.block_parses.clear()
        self.rows.clear()


def _cli(root: Path, *argv: str) -> int:
    from cutile_workbench.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["--out-root", str(root), *argv])


def test_trust_decodes_each_capture_member_once(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Identity and the reference's config come from at most one decode of each config's sets (none
    with the store's columns; before issue 31: two, the second thrashing the store's bounded cache at
    40 configs)."""
    from cutile_workbench.evidence.trust import kernel_trust
    from cutile_workbench.services import stage_e

    kdir, _ = session
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    table = stage_e.ratio_table(ws)
    assert len(table.rows) == N
    counts = Counts(monkeypatch)
    trust = kernel_trust(ws, table, candidate_framework="cutile-rs")
    assert {i.mark for i in trust.identities.values()} == {"own"}
    assert len(trust.reference_configs) == N
    # the store's columns (issue 31, fourth wave) answer without a decode; never more than one a member
    assert max(counts.decodes.values(), default=0) <= 1, counts.decodes.most_common(3)
    assert sum(counts.decodes.values()) == 0  # tests/unit/test_cost_fresh.py: decoded once without columns


@pytest.mark.parametrize(
    "argv",
    [
        ("table", "matmul", "--json"),
        ("report", "e", "matmul", "--dry-run"),
        ("report", "f", "matmul", "--dry-run"),
    ],
    ids=["table", "report-e", "report-f"],
)
def test_each_perf_log_parsed_once_and_each_member_decoded_once_per_process(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    """A fresh process with a fresh user cache: every perf log is parsed at most once, every capture
    member decoded at most once (today: the logs 4-7 times, the members twice)."""
    kdir, _ = session
    counts = Counts(monkeypatch)
    assert _cli(kdir.parent, *argv) in (0, 1)
    assert counts.parses, "the command parsed no log: the count would prove nothing"
    assert max(counts.parses.values()) == 1, dict(counts.parses)
    # report e's sanitizer checks each record block of the candidate log once
    assert max(counts.block_parses.values(), default=0) <= N, dict(counts.block_parses)
    assert max(counts.decodes.values(), default=0) <= 1, counts.decodes.most_common(3)


def test_warm_commands_reuse_the_trust_table_computed(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `table` (a warm user cache), `report e`, `report f` and `table` derive no config's trust
    and decode no capture member again (today: `report e/f` bypass the cached trust)."""
    kdir, _ = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    counts = Counts(monkeypatch)
    for argv in (("report", "e", "matmul", "--dry-run"), ("report", "f", "matmul", "--dry-run")):
        _forget_process_memos()  # a new process, the user cache warm
        counts.reset()
        assert _cli(kdir.parent, *argv) in (0, 1)
        assert not counts.rows, (argv, counts.rows.most_common(3))
        # F reads one config's launches for its own evidence; trust decodes none
        assert sum(counts.decodes.values()) <= 2 * N, (argv, sum(counts.decodes.values()))


def test_after_one_config_changed_only_its_trust_is_recomputed(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-run of one config (its samples and capture members rewritten): the next `table` derives that
    config's trust alone and decodes none of its members (its columns are rewritten with them; before:
    every config, every member)."""
    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    counts = Counts(monkeypatch)
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    assert dict(counts.rows) == {config: 1}
    assert sum(counts.decodes.values()) == 0, counts.decodes  # its columns were rewritten with it


def test_rerecorded_config_is_seen_changed(session: tuple[Path, str]) -> None:
    """The helper the benchmark's "after one config changed" case uses changes that config's ratio and
    capture, and nothing else (else the counts above would prove nothing)."""
    from cutile_workbench.artifacts.launch_store import open_store
    from cutile_workbench.services import stage_e

    kdir, config = session
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    before = {r.params: r for r in stage_e.ratio_table(ws).rows}
    sets_before = {
        i: (s.params, s.calls[0].launches[0].end_ns)
        for i, s in enumerate(open_store(kdir / "workbench/launches.json.gz"))
    }
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    after = {r.params: r for r in stage_e.ratio_table(ws).rows}
    changed = {p for p in before if before[p].candidate_ms != after[p].candidate_ms}
    assert changed == {config}
    sets_after = {
        i: (s.params, s.calls[0].launches[0].end_ns)
        for i, s in enumerate(open_store(kdir / "workbench/launches.json.gz"))
    }
    assert {sets_after[i][0] for i in sets_after if sets_after[i] != sets_before[i]} == {config}


def test_timeline_of_one_config_reads_that_config_alone(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`timeline --config` after `table` (warm user cache): no perf log parsed (E's cached table names
    the row), and only that config's capture members decoded (today: both logs parsed, every row's
    bootstrap recomputed for one row's trust)."""
    from cutile_workbench.artifacts.launch_store import open_store

    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    mine = set(open_store(kdir / "workbench/launches.json.gz").indices_for_params(config))
    _forget_process_memos()
    counts = Counts(monkeypatch)
    assert _cli(kdir.parent, "timeline", "matmul", "--config", config, "--json") == 0
    assert not counts.parses, dict(counts.parses)
    assert counts.decodes and set(counts.decodes) <= mine, sorted(counts.decodes)


def test_cheap_table_is_the_full_table_without_its_bootstrap(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cheap facts a face can paint first (issue 31 §3): every row's medians and ratio, the geomean
    and severity, equal to the full table's, with no bootstrap draw and no capture decoded."""
    from cutile_workbench.services import stage_e
    from cutile_workbench.stages.e import stats
    from cutile_workbench.stages.e.e_table import cheap_table, load_e_table

    kdir, _ = session
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    full = load_e_table(ws, use_cache=False).table
    _forget_process_memos()
    counts = Counts(monkeypatch)
    draws: list[int] = []
    real = stats.bootstrap_medians
    monkeypatch.setattr(stats, "bootstrap_medians", lambda *a: draws.append(1) or real(*a))
    cheap = cheap_table(stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None))
    assert not draws and not counts.decodes
    assert max(counts.parses.values()) == 1
    key = ("func_key", "params", "status", "baseline_backend", "baseline_ms", "candidate_ms", "ratio")
    assert [tuple(getattr(r, k) for k in key) for r in cheap.rows] == [
        tuple(getattr(r, k) for k in key) for r in full.rows
    ]
    assert len(cheap.rows) == N and all(r.ci_low is None for r in cheap.rows)
    assert any(r.ci_low is not None for r in full.rows)  # the full table has the CIs the cheap one lacks
    assert (cheap.geomean, cheap.severity, cheap.verdict) == (full.geomean, full.severity, full.verdict)


@pytest.mark.parametrize("which", ["other", "changed"])
def test_timeline_after_one_config_changed_derives_that_config_alone(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """`timeline --config` after one config was re-run (the user cache warm from `table`): no
    kernel-wide trust is assembled (every config's entry read, the whole trust written back) for one
    config's answer; only the asked config's trust is derived, and only when it is the changed one
    (before: the whole trust assembled on every such miss)."""
    from cutile_workbench.evidence import trust
    from cutile_workbench.services import stage_e

    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    other = next(r.params for r in stage_e.ratio_table(ws).rows if r.params != config)
    asked = config if which == "changed" else other
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    counts = Counts(monkeypatch)
    assemblies: list[int] = []
    real = trust.kernel_trust
    monkeypatch.setattr(trust, "kernel_trust", lambda *a, **kw: assemblies.append(1) or real(*a, **kw))
    assert _cli(kdir.parent, "timeline", "matmul", "--config", asked, "--json") == 0
    assert not assemblies
    assert dict(counts.rows) == ({config: 1} if which == "changed" else {})


def test_timeline_states_the_trust_table_states(session: tuple[Path, str]) -> None:
    """The one config's trust timeline derives on its own is the kernel-wide trust's entry for it."""
    from cutile_workbench.services import stage_e
    from cutile_workbench.services.timeline import config_trust
    from cutile_workbench.stages.session.kernel import KernelSession

    kdir, config = session
    scale_cost.rerecord_config(kdir, config)
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    whole = stage_e.trust(ws)
    _forget_process_memos()
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    for params in (config, next(p for p in whole.identities if p != config)):
        one = config_trust("matmul", params, session=KernelSession.of(ws))
        assert one.identity == whole.identities[params]
        assert one.reference == whole.reference_configs.get(params)


def test_one_config_changed_encodes_one_entry_and_timeline_decodes_one(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-config file holds each entry as it was stored: after one config changed, `table` encodes
    that config's trust entry alone when it writes the file back, and `timeline --config` decodes only
    the entry it asks for (before: every entry decoded on load and re-encoded on every write)."""
    from cutile_workbench.artifacts import derive_cache
    from cutile_workbench.evidence.trust import ConfigTrust

    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    enc: list[int] = []
    dec: list[int] = []
    real_enc, real_dec = derive_cache._enc, derive_cache._dec_raw

    def count_enc(v: Any, depth: int) -> Any:
        if isinstance(v, ConfigTrust):
            enc.append(1)
        return real_enc(v, depth)

    def count_dec(d: Any, depth: int) -> Any:
        got = real_dec(d, depth)
        if isinstance(got, ConfigTrust):
            dec.append(1)
        return got

    monkeypatch.setattr(derive_cache, "_enc", count_enc)
    monkeypatch.setattr(derive_cache, "_dec_raw", count_dec)
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    assert len(enc) == 1, len(enc)
    scale_cost.rerecord_config(kdir, config, 1 / 1.03)
    _forget_process_memos()
    enc.clear()
    dec.clear()
    other = next(p for p in scale_cost_params(kdir) if p != config)
    assert _cli(kdir.parent, "timeline", "matmul", "--config", other, "--json") == 0
    assert len(dec) <= 1 and not enc, (len(dec), len(enc))


def scale_cost_params(kdir: Path) -> list[str]:
    from cutile_workbench.artifacts.launch_store import open_store

    return list(open_store(kdir / "workbench/launches.json.gz").params())


def test_after_one_config_changed_one_row_bootstrap_is_drawn(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """E's table per row (issue 31 item 1): after one config's blocks changed, `table` draws that row's
    bootstrap alone (two median draws: its candidate and its baseline) and reuses every other row's
    (before: every row redrawn from one random stream, 2 x N draws); the table it then shows is the
    table built from nothing (no cache), CI digits included."""
    from cutile_workbench.services import stage_e
    from cutile_workbench.stages.e import stats
    from cutile_workbench.stages.e.e_table import load_e_table

    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    draws: list[int] = []
    real = stats.bootstrap_medians
    monkeypatch.setattr(stats, "bootstrap_medians", lambda *a: draws.append(1) or real(*a))
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    got = load_e_table(ws).table
    assert len(draws) == 2, len(draws)
    monkeypatch.setattr(stats, "bootstrap_medians", real)
    _forget_process_memos()
    ws = stage_e.open_kernel("matmul", out_root=kdir.parent, tilegym=None)
    fresh = load_e_table(ws, use_cache=False).table
    assert got.geomean_ci is not None and got.geomean_ci == fresh.geomean_ci
    assert [(r.params, r.ci_low, r.ci_high) for r in got.rows] == [
        (r.params, r.ci_low, r.ci_high) for r in fresh.rows
    ]


def _cli_out(root: Path, *argv: str) -> tuple[int, str]:
    from cutile_workbench.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["--out-root", str(root), *argv])
    return rc, out.getvalue()


@pytest.mark.parametrize("which", ["other", "changed"])
def test_timeline_after_one_config_changed_seeks_that_configs_sections(
    session: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """Issue 31 item 2: `timeline --config` after one config was re-run (E's cached table now stale)
    parses neither perf log whole: each log's byte-offset index finds the asked config's section, read
    by seeking and parsed alone (one cut per log); before, both logs were parsed whole and every row's
    bootstrap redrawn. Its answer is the one the whole table gives (after `table` rebuilt it)."""
    kdir, config = session
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    other = next(p for p in scale_cost_params(kdir) if p != config)
    asked = config if which == "changed" else other
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    counts = Counts(monkeypatch)
    rc, seeked = _cli_out(kdir.parent, "timeline", "matmul", "--config", asked, "--json")
    assert rc == 0
    assert not counts.parses, dict(counts.parses)
    assert sum(counts.block_parses.values()) == 2, dict(counts.block_parses)  # one cut of each log
    assert _cli(kdir.parent, "table", "matmul", "--json") in (0, 1)
    _forget_process_memos()
    rc, whole = _cli_out(kdir.parent, "timeline", "matmul", "--config", asked, "--json")
    assert rc == 0 and seeked == whole
