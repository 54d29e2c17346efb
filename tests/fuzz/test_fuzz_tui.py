"""The TUI shows bad input instead of crashing (issue 6 item 1), exercised from outside.

A REAL recorded session is copied to a temp out root, one input file is mutated with the seeded
mutator, and ``cutile_workbench.tui.loaders.load_app_data`` (+ its background IR loader) must return, with
every problem an InputError (the bad-input kind) that names a file; then the app is mounted headless on such data and
must show each problem as a notification and keep answering keys.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from fuzzing.cli_case import KERNEL, MUTABLE, PRISTINE
from fuzzing.mutator import mutate
from fuzzing.targets import KNOWN_BUGS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pilot_wait import drain, until

from cutile_workbench.errors import InputError, WorkbenchError

pytest.importorskip("textual")


def _mutated_root(seed: int, base: Path) -> tuple[Path, str]:
    rng = random.Random(seed)
    root = base / f"s{seed}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(PRISTINE, root / KERNEL, ignore=shutil.ignore_patterns("launches.json.gz"))
    rel = rng.choice(MUTABLE)
    target = root / KERNEL / rel
    target.write_bytes(mutate(target.read_bytes(), seed)[0])
    return root, rel


def _load(root: Path) -> tuple[object, list[WorkbenchError]]:
    from cutile_workbench.tui.loaders import load_app_data

    data = load_app_data(KERNEL, out_root=root, tilegym=None, env={})
    assert data.ir_loader is not None
    _pairs, ir_problems = data.ir_loader()
    return data, [*data.problems, *ir_problems]


def _is_known_bug(exc: BaseException) -> bool:
    return any(type(exc).__name__ == b.exc_type and b.message.search(str(exc)) for b in KNOWN_BUGS)


@settings(max_examples=10, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_loader_turns_bad_files_into_named_problems(seed: int, tmp_path: Path) -> None:
    root, rel = _mutated_root(seed, tmp_path)
    try:
        _data, problems = _load(root)
    except WorkbenchError as exc:  # a refusal is fine if it is the bad-input kind and says where
        assert isinstance(exc, InputError) and exc.path is not None, (
            f"seed {seed} ({rel}): {type(exc).__name__} {exc}"
        )
        return
    except Exception as exc:
        if _is_known_bug(exc):  # tracked by tests/fuzz/test_fuzz_known_bugs.py
            return
        raise AssertionError(
            f"seed {seed} ({rel}): load_app_data crashed: {type(exc).__name__}: {exc}"
        ) from exc
    for p in problems:
        assert isinstance(p, InputError) and p.path is not None, (
            f"seed {seed} ({rel}): not a located InputError: {p!r}"
        )


def _seeds_with_problems(base: Path, want: int) -> list[int]:
    """The first seeds whose mutated session loads with at least one problem (deterministic)."""
    found = []
    for seed in range(200):
        root, _rel = _mutated_root(seed, base)
        try:
            _data, problems = _load(root)
        except Exception:
            continue
        if problems:
            found.append(seed)
        if len(found) == want:
            break
    return found


async def test_app_shows_fuzzed_problems_and_keeps_answering(tmp_path: Path) -> None:
    from cutile_workbench.tui.app import make_app
    from cutile_workbench.tui.loaders import load_app_data

    # seeds 5 and 6 (found by _seeds_with_problems, the mutator is deterministic): a truncated
    # reference.mlir (reported by the background IR load, and still diffed: the structural diff
    # text-diffs what it cannot parse, issue 19) and a damaged triton baseline log
    for seed in (5, 6):
        root, rel = _mutated_root(seed, tmp_path / "app")
        loaded, problems = _load(root)
        assert problems, f"seed {seed} no longer damages {rel}: pick new seeds with _seeds_with_problems"
        if rel.endswith(".mlir"):
            assert any("truncated IR" in str(p) for p in problems)
            pairs, _ = loaded.ir_loader()  # type: ignore[attr-defined]
            assert pairs and all(p.structure == "not fully parsed" for p in pairs if p.config is None)
        data = load_app_data(KERNEL, out_root=root, tilegym=None, env={})
        app = make_app(data)
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda app=app: app.current_mode == "ratios", "the Ratios screen shown")
            await app.workers.wait_for_complete()
            await drain(pilot)  # the loaders notified from their threads before they ended
            msgs = [str(n.message) for n in app._notifications]
            assert any(Path(rel).name in m for m in msgs), f"seed {seed}: {rel} problem not shown: {msgs}"
            await pilot.press("2", "3", "4", "1")
            await until(pilot, lambda app=app: app.current_mode == "ratios", "back on Ratios after 2 3 4 1")
            assert app.is_running
