"""Identity's edges: which kinds are "not the candidate" (a row that launched nothing is one), and the
summary's WARNING when SOME rows are foreign, not only when all are (issue 35, item 2: no test mixed
own and REF rows). SYNTHETIC identities; the kinds and words are the module's."""

from __future__ import annotations

import pytest

from cutile_workbench.evidence.candidate_identity import NOT_CANDIDATE, CandidateIdentity, summary_line


def _ids(*kinds: str) -> dict[str, CandidateIdentity]:
    return {f"cfg{i}": CandidateIdentity(f"cfg{i}", k, "why") for i, k in enumerate(kinds)}  # type: ignore[arg-type]


def test_the_kinds_that_are_not_the_candidate() -> None:
    assert frozenset({"reference", "library", "none"}) == NOT_CANDIDATE
    for kind, foreign in (
        ("reference", True),
        ("library", True),
        ("none", True),
        ("candidate", False),
        ("unknown", False),
    ):
        assert CandidateIdentity("p", kind, "w").not_candidate is foreign, kind  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kinds", "warning"),
    [
        (("candidate", "candidate"), False),  # all own: no warning
        (("candidate", "reference"), True),  # one of two foreign: a warning, not only when all are
        (("candidate", "candidate", "none"), True),  # launched nothing is not the candidate
        (("candidate", "library"), True),
        (("candidate", "unknown"), False),  # unknown is said, not warned about
        (("reference", "reference"), True),
    ],
)
def test_the_warning_is_for_any_foreign_row(kinds: tuple[str, ...], warning: bool) -> None:
    line = summary_line(_ids(*kinds), "cutile-rs")
    assert line.startswith("WARNING: ") is warning, line
    own = kinds.count("candidate")
    if own != len(kinds):
        assert f"{own} of {len(kinds)} rows ran cutile-rs's own kernels" in line
