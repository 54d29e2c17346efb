"""Issue 31: history comparability and trust derived once per config, not once more per kernel (counted,
not timed: these hold on any box).

Sessions: the REAL recorded H200 matmul session replicated to N configs by ``bench/scale_cost.py``'s
builder, "one config changed" by its :func:`rerecord_config` (tests/unit/test_cost_counts.py's fixture).

What is counted: a config's trust written to the user cache (``derive_cache._enc`` of a
:class:`CandidateIdentity`: every config's identity is in its per-config entry; before, the kernel-level
entry held every identity and reference config again, so a fresh `table` encoded each twice and a
re-run of one config re-encoded all N), per-config derivations (``trust._derive_config``) and the
measurement conditions' derivations (``history.conditions.ratio_conditions``), and the per-config file
read on a warm command.
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
sys.path.insert(0, str(REPO / "tests" / "unit"))
sys.path.insert(0, str(REPO / "bench"))

import scale_cost  # noqa: E402
from test_cost_counts import N, _forget_process_memos, session  # noqa: E402,F401


def _table(root: Path) -> tuple[int, str]:
    from cutile_workbench.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = main(["--out-root", str(root), "table", "matmul", "--json"])
    return rc, out.getvalue()


class Work:
    """Identities encoded, configs derived, measurement conditions derived."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from cutile_workbench.artifacts import derive_cache
        from cutile_workbench.evidence import trust
        from cutile_workbench.evidence.candidate_identity import CandidateIdentity
        from cutile_workbench.history import conditions

        self.encoded: Counter[str] = Counter()
        self.derived: Counter[str] = Counter()
        self.conditions = 0
        real_enc, real_derive, real_cond = (
            derive_cache._enc,
            trust._derive_config,
            conditions.ratio_conditions,
        )

        def enc(v: Any, depth: int) -> Any:
            if isinstance(v, CandidateIdentity):
                self.encoded[v.params] += 1
            return real_enc(v, depth)

        def derive(row: Any, *a: Any, **kw: Any) -> Any:
            self.derived[row.params] += 1
            return real_derive(row, *a, **kw)

        def cond(*a: Any, **kw: Any) -> Any:
            self.conditions += 1
            return real_cond(*a, **kw)

        monkeypatch.setattr(derive_cache, "_enc", enc)
        monkeypatch.setattr(trust, "_derive_config", derive)
        monkeypatch.setattr(conditions, "ratio_conditions", cond)
        # the services module binds the name at import: count the call it makes
        from cutile_workbench.services import history as services_history

        if getattr(services_history, "ratio_conditions", None) is real_cond:
            monkeypatch.setattr(services_history, "ratio_conditions", cond)


def test_a_fresh_table_encodes_each_configs_trust_once(
    session: tuple[Path, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A fresh process and user cache: each config's trust is derived once and written once (its
    per-config entry); the kernel-level entry names the per-config entries (before: it held every
    identity again, 2N encodes), and the measurement conditions are derived once."""
    kdir, _ = session
    work = Work(monkeypatch)
    rc, _out = _table(kdir.parent)
    assert rc in (0, 1)
    assert len(work.derived) == N and max(work.derived.values()) == 1, work.derived.most_common(2)
    assert len(work.encoded) == N and max(work.encoded.values()) == 1, work.encoded.most_common(2)
    assert work.conditions == 1


def test_after_one_config_changed_table_encodes_that_configs_trust_alone(
    session: tuple[Path, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A re-run of one config: `table` derives and encodes that config's trust alone (before: its entry
    and then all N identities again in the kernel-level entry)."""
    kdir, config = session
    assert _table(kdir.parent)[0] in (0, 1)
    scale_cost.rerecord_config(kdir, config)
    _forget_process_memos()
    work = Work(monkeypatch)
    assert _table(kdir.parent)[0] in (0, 1)
    assert dict(work.derived) == {config: 1}
    assert dict(work.encoded) == {config: 1}, sum(work.encoded.values())


def test_warm_table_is_the_fresh_table_and_derives_nothing(
    session: tuple[Path, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The warm `table --json` (trust assembled from the per-config entries the kernel-level entry
    names) is the fresh one byte for byte, and derives and encodes nothing."""
    kdir, _ = session
    rc, fresh = _table(kdir.parent)
    _forget_process_memos()
    work = Work(monkeypatch)
    rc2, warm = _table(kdir.parent)
    assert (rc2, warm) == (rc, fresh)
    assert not work.derived and not work.encoded and work.conditions == 0


def test_a_lost_per_config_file_is_derived_again_not_trusted_missing(
    session: tuple[Path, str],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    """The kernel-level entry names per-config entries; when the per-config file is gone (pruned,
    removed by hand) the next `table` derives every config again and states the same table."""
    kdir, _ = session
    rc, fresh = _table(kdir.parent)
    cache = tmp_path / "user-cache" / "trust-config"
    assert cache.is_dir() and any(cache.iterdir())
    for p in cache.iterdir():
        p.unlink()
    _forget_process_memos()
    work = Work(monkeypatch)
    rc2, again = _table(kdir.parent)
    assert (rc2, again) == (rc, fresh)
    assert len(work.derived) == N and max(work.derived.values()) == 1, work.derived.most_common(2)


@pytest.mark.parametrize("seed", range(40))
def test_the_header_lines_are_the_first_lines_of_the_whole_split(seed: int) -> None:
    """SYNTHETIC texts (every line break str.splitlines knows, a CRLF cut at any offset, long and short
    lines): the header's head lines equal the whole text's first 400 lines (it splits a prefix only)."""
    import random

    from cutile_workbench.history.importer import _head_lines

    rnd = random.Random(seed)
    breaks = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\n\n", "\r\r\n"]
    parts = []
    for _ in range(rnd.choice([10, 399, 400, 401, 2000, 20000])):
        parts.append("x" * rnd.choice([0, 1, 5, 80, 300, 70000 if rnd.random() < 0.01 else 3]))
        parts.append(rnd.choice(breaks))
    text = "".join(parts) + rnd.choice(["", "tail"])
    for n in (1, 399, 400, 401):
        assert _head_lines(text, n) == text.splitlines()[:n]


def test_the_header_lines_where_a_crlf_straddles_the_prefix() -> None:
    """SYNTHETIC: the 400th line's CRLF split by the first prefix (its CR the prefix's last character)."""
    from cutile_workbench.history.importer import _head_lines

    text = ("a" * 160 + "\r\n") * 399 + "b" * (65535 - 399 * 162) + "\r\n" + "c\r\n" * 50
    assert text[65535:65537] == "\r\n"
    for n in (399, 400, 401):
        assert _head_lines(text, n) == text.splitlines()[:n]
