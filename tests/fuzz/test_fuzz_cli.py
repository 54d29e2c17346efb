"""Fuzz the CLI end to end: one file of a REAL recorded session (copied to a temp out root) mutated,
then ``report e --yes`` / ``report f --yes`` / ``table --json`` run in-process.

The rule (``tests/fuzzing/cli_case.py``): exit 0-3 and never "internal error"; a refusal writes
nothing (sha256 tree snapshot before == after); exit 2 names ``file:line`` or a key; what is written
lies under ``reports/`` (or is E's perf log) and passes the in-process validators, with exactly one
``geomean_ratio=`` line and a VERDICT that agrees with it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fuzzing.cli_case import COMMANDS, PRISTINE, run_cli_case, snapshot
from fuzzing.targets import RuleViolation
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_settings = settings(
    max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.mark.parametrize("stage", sorted(COMMANDS))
@_settings
@given(seed=st.integers(0, 2**32 - 1))
def test_cli_on_a_mutated_session(stage: str, seed: int, tmp_path: Path) -> None:
    run_cli_case(stage, seed, tmp_path)


def test_cli_case_detects_a_write_after_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker can fail: a CLI that writes and then exits 2 is caught."""
    import cutile_workbench.cli as cli

    def bad_main(argv: list[str]) -> int:
        root = Path(argv[argv.index("--out-root") + 1])
        (root / "rms_norm/reports/performance.md").write_text("VERDICT: DONE\n")
        return 2

    monkeypatch.setattr(cli, "main", bad_main)
    with pytest.raises(RuleViolation, match="tree changed"):
        run_cli_case("e", 1, tmp_path)


def test_recorded_session_is_untouched() -> None:
    """The fuzz cases work on copies: the packaged recorded session itself never changes."""
    assert "reports/performance.md" not in snapshot(PRISTINE)


@pytest.mark.slow
@pytest.mark.parametrize("stage", sorted(COMMANDS))
def test_cli_sweep(stage: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("slow CLI sweep: select it with -m slow")
    cases = int(os.environ.get("FUZZ_CLI_CASES", "300"))
    violations = []
    for seed in range(cases):
        try:
            run_cli_case(stage, seed, tmp_path)
        except RuleViolation as exc:
            violations.append(str(exc)[:300])
    assert not violations, "\n".join(violations[:10])
