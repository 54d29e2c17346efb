"""Fuzz every parser of user files: bad input returns a result or a located InputError (no other kind).

Two generators, one rule (``tests/fuzzing/targets.py``):
- seeded mutation of the REAL recorded H200 files (``cutile_workbench/profiles/*/session/*``) and real fixtures;
- structured hypothesis strategies (SYNTHETIC valid-ish perf-log blocks, analysis.json / launches
  trees with wrong types, IR lines, event objects), see ``tests/fuzzing/strategies.py``.

The default (``ci``) hypothesis profile keeps this file at a few seconds; ``HYPOTHESIS_PROFILE=fuzz``
raises every ``@given`` test to 10,000 examples, and ``-m slow`` runs the plain-loop
≥ 10,000-mutations-per-parser sweep (``FUZZ_CASES`` overrides the count).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

import pytest
from fuzzing import strategies as S
from fuzzing.mutator import OPERATIONS, mutate
from fuzzing.targets import (
    KNOWN_BUGS,
    REPO,
    TARGETS,
    RuleViolation,
    Target,
    check_case,
    run_mutation_case,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cutile_workbench.errors import InputError, ValidationRefused

_fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def test_every_target_has_real_seed_files() -> None:
    for name, target in TARGETS.items():
        assert target.seeds, f"{name}: no seed files found"
        for p in target.seeds:
            assert p.is_file() and p.stat().st_size > 0, p


def test_mutator_is_deterministic_and_changes_input() -> None:
    data = (
        REPO / "cutile_workbench/profiles/rms_norm/session/rms_norm/baseline_perf_cutile.txt"
    ).read_bytes()
    changed = 0
    for seed in range(200):
        a, ops_a = mutate(data, seed)
        b, ops_b = mutate(data, seed)
        assert (a, ops_a) == (b, ops_b)
        assert set(ops_a) <= set(OPERATIONS)
        changed += a != data
    assert changed >= 190  # a no-op mutation is rare (e.g. a CRLF pass on a file without "\n")


def test_structured_mutators_are_deterministic_and_structural() -> None:
    """Issue 25's mutation classes: same seed, same bytes; the JSON edits land in the document's values."""
    from fuzzing.structured import mutate_history_cells, mutate_json, mutate_keymap, mutate_record_json

    session = (REPO / "cutile_workbench/profiles/tilegym/session/matmul/workbench/session.json").read_bytes()
    log = (REPO / "cutile_workbench/profiles/tilegym/session/matmul/baseline_perf_cutile.txt").read_bytes()
    keymap = (REPO / "tests/fuzzing/seeds/keymap.toml").read_bytes()
    ops_seen: set[str] = set()
    for seed in range(60):
        for fn, data in ((mutate_json, session), (mutate_record_json, log), (mutate_keymap, keymap)):
            a, b = fn(data, seed), fn(data, seed)
            assert a == b and a[0] != data
            ops_seen.update(op.split(":")[0] for op in a[1])
    assert {"swap", "raw", "drop", "record_json", "toml"} <= ops_seen, ops_seen
    store = TARGETS["history_cells"].decode_seed(b"")
    out, ops = mutate_history_cells(store, 3)
    assert (out, ops) == mutate_history_cells(store, 3) and all(o.startswith("cell:") for o in ops)


def test_rule_rejects_an_untyped_exception_an_unlocated_error_and_the_wrong_kind(tmp_path: Path) -> None:
    """The checker itself can fail: a crash, a location-free error, or a located error of another
    kind than the input class calls for (a damaged user file must be an InputError) is a violation."""
    p = tmp_path / "x.txt"
    p.write_text("x")

    def crash(_p: Path) -> None:
        raise KeyError("boom")

    def unlocated(_p: Path) -> None:
        raise InputError("bad value", path=str(_p))

    def wrong_kind(_p: Path) -> None:
        raise ValidationRefused("bad value", path=str(_p), line=3)

    def located(_p: Path) -> None:
        raise InputError("bad value", path=str(_p), line=3)

    for fn, why in (
        (crash, "untyped KeyError"),
        (unlocated, "names no line or key"),
        (wrong_kind, "ValidationRefused, expected InputError"),
    ):
        with pytest.raises(RuleViolation, match=why):
            check_case(Target("t", (p,), fn), p, "repro")
    assert check_case(Target("t", (p,), located), p, "repro").outcome == "InputError"
    assert (
        check_case(Target("t", (p,), wrong_kind, expected=(ValidationRefused,)), p, "r").outcome
        == "ValidationRefused"
    )


# ----------------------------------------------------------------------------- mutation of real files


@pytest.mark.parametrize("name", sorted(TARGETS))
@_fixture_ok
@given(seed=SEEDS)
def test_mutated_real_files(name: str, seed: int, tmp_path: Path) -> None:
    run_mutation_case(TARGETS[name], seed, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TARGETS))
def test_mutated_real_files_10k(name: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The slow sweep: ≥ 10,000 seeded mutations per parser, every violation collected."""
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("slow fuzz sweep: select it with -m slow")
    cases = int(os.environ.get("FUZZ_CASES", "10000"))
    violations: list[str] = []
    for seed in range(cases):
        try:
            run_mutation_case(TARGETS[name], seed, tmp_path)
        except RuleViolation as exc:
            violations.append(str(exc).split("\n")[0])
    assert not violations, f"{len(violations)} violation(s):\n" + "\n".join(violations[:20])


# ----------------------------------------------------------------------------- structured strategies


def _check_text(target_name: str, text: str | bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"case{suffix}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        check_case(TARGETS[target_name], path, f"{target_name} on structured input {text[:300]!r}")


@given(text=S.perf_log_texts())
def test_structured_perf_logs(text: str) -> None:
    for name in ("perflog", "perflog_strict", "sanitizer"):
        _check_text(name, text, ".txt")


_ANALYSIS = json.loads(
    (REPO / "cutile_workbench/profiles/rms_norm/session/rms_norm/reference/analysis.json").read_text()
)
_LAUNCHES = json.loads((REPO / "tests/fixtures/f/rms_norm_16384x2048.launches.json").read_text())


@given(doc=S.real_json_with_bad_value(_ANALYSIS))
def test_structured_analysis_json(doc: object) -> None:
    _check_text("analysis_json", S.dumps_loose(doc), ".json")


@given(doc=S.real_json_with_bad_value(_LAUNCHES), zipped=st.booleans())
def test_structured_launch_json(doc: object, zipped: bool) -> None:
    raw = S.dumps_loose(doc).encode()
    _check_text("launches_json", gzip.compress(raw) if zipped else raw, ".json.gz" if zipped else ".json")


@given(text=S.ir_texts())
def test_structured_ir(text: str) -> None:
    for name in ("ir_load", "ir_canon", "ir_audit", "ir_diff", "ir_structdiff"):
        _check_text(name, text, ".mlir")


@given(text=S.event_lines())
def test_structured_events(text: str) -> None:
    for name in ("events", "events_tail"):
        _check_text(name, text, ".jsonl")


@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_every_parser(data: bytes) -> None:
    for name, target in TARGETS.items():
        _check_text(name, data, target.suffix)


def test_known_bug_entries_name_real_targets() -> None:
    for bug in KNOWN_BUGS:
        assert bug.targets <= set(TARGETS), bug
