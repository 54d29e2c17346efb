"""Identity's edges: which kinds are "not the candidate" (a row that launched nothing is one), and the
summary's WARNING when SOME rows are foreign, not only when all are (issue 35, item 2: no test mixed
own and REF rows). SYNTHETIC identities; the kinds and words are the module's. The family rule (a kernel
of the reference's framework that the reference did not run for that config) on the REAL matmul captures,
the candidate's kernel renamed (labelled per test)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cutile_workbench.artifacts.launches_io import load_launch_sets
from cutile_workbench.evidence.candidate_identity import (
    NOT_CANDIDATE,
    CandidateIdentity,
    candidate_identities,
    summary_line,
    symbol_family,
)
from cutile_workbench.model import LaunchSet
from cutile_workbench.services import stage_e

SESSION = Path(__file__).parents[2] / "cutile_workbench" / "profiles" / "tilegym" / "session"


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


def _matmul_with_persistent_candidate_named(name: str, *, drop_baseline: bool = False) -> dict[str, str]:
    """{params: kind} of the REAL matmul session with the candidate's static-persistent launches renamed."""
    sets: list[LaunchSet] = []
    for st in load_launch_sets(SESSION / "matmul" / "workbench" / "launches.json.gz"):
        if st.backend == "cutile" and drop_baseline:
            continue
        if st.backend == "cutile_rs" and st.params.startswith("True-True-"):
            calls = [
                dataclasses.replace(c, launches=tuple(dataclasses.replace(x, name=name) for x in c.launches))
                for c in st.calls
            ]
            st = dataclasses.replace(st, calls=calls)
        sets.append(st)
    rows = stage_e.ratio_table(stage_e.open_kernel("matmul", out_root=SESSION, tilegym=None)).rows
    ids = candidate_identities(rows, sets, candidate_backend="cutile_rs", candidate_framework="cutile-rs")
    return {p: i.kind for p, i in ids.items() if p.startswith("True-True-")}


def _np_cutile_symbol() -> str:
    """The REAL cuTile Python symbol the reference ran for the non-persistent configs only."""
    sets = load_launch_sets(SESSION / "matmul" / "workbench" / "launches.json.gz")
    return next(
        x.name
        for st in sets
        if st.backend == "cutile" and st.params.startswith("True-False-")
        for c in st.calls
        for x in c.launches
        if x.kind == "kernel"
    )


def test_a_kernel_of_the_references_framework_is_the_reference_even_with_another_symbol() -> None:
    """The candidate of the static-persistent configs ran the REAL non-persistent cuTile Python kernel: the
    reference did not run that symbol for those configs, but it is the reference's framework, not cutile-rs
    (issue 35: ``cand.family == ref_fam`` → ``!=`` survived)."""
    name = _np_cutile_symbol()
    assert symbol_family(name) == "cuTile Python"
    kinds = _matmul_with_persistent_candidate_named(name)
    assert len(kinds) == 3 and set(kinds.values()) == {"reference"}


def test_a_symbol_of_another_family_than_the_references_is_unknown_not_reference() -> None:
    """SYNTHETIC plain (Triton-like) name under a cuTile Python reference: neither own nor the reference's
    framework, so unknown — never guessed to be the reference."""
    assert symbol_family("matmul_kernel") == "plain"
    kinds = _matmul_with_persistent_candidate_named("matmul_kernel")
    assert len(kinds) == 3 and set(kinds.values()) == {"unknown"}


def test_the_family_rule_needs_a_captured_reference() -> None:
    """The cuTile Python kernel with no capture of the reference: the reference's framework is unknown, so
    is the identity."""
    kinds = _matmul_with_persistent_candidate_named(_np_cutile_symbol(), drop_baseline=True)
    assert len(kinds) == 3 and set(kinds.values()) == {"unknown"}


def _real_matmul_identities(edit) -> dict[str, CandidateIdentity]:  # type: ignore[no-untyped-def]
    """{params: identity} of the REAL matmul session with its launch sets edited by ``edit`` (sets → sets)."""
    sets = edit(load_launch_sets(SESSION / "matmul" / "workbench" / "launches.json.gz"))
    rows = stage_e.ratio_table(stage_e.open_kernel("matmul", out_root=SESSION, tilegym=None)).rows
    return candidate_identities(rows, sets, candidate_backend="cutile_rs", candidate_framework="cutile-rs")


def test_two_captures_of_the_candidate_are_both_the_candidate_s() -> None:
    """REAL captures, the candidate's set of each config captured twice (a re-run appended): neither copy
    counts as another backend's, so the candidate's own kernel is not "the reference's" (issue 31: the
    base sets are the config's sets that are not a candidate set, by position)."""

    def twice(sets: list[LaunchSet]) -> list[LaunchSet]:
        return [
            *sets,
            *(dataclasses.replace(s, nodeid=s.nodeid + "#2") for s in sets if s.backend == "cutile_rs"),
        ]

    ids = _real_matmul_identities(twice)
    assert ids and {i.kind for i in ids.values()} == {"candidate"}, {p: i.why for p, i in ids.items()}


def test_a_candidate_capture_without_calls_is_unknown_not_none() -> None:
    """REAL captures, the candidate's calls of one config removed (a CUPTI set that captured no call):
    nothing was measured, so its identity is unknown and says why — not "launched no kernel"."""
    target = "True-True-False-False-2048-2048-2048-0-0-torch.float16"

    def no_calls(sets: list[LaunchSet]) -> list[LaunchSet]:
        return [
            dataclasses.replace(s, calls=[]) if s.backend == "cutile_rs" and s.params == target else s
            for s in sets
        ]

    ident = _real_matmul_identities(no_calls)[target]
    assert (ident.kind, ident.why) == ("unknown", "the candidate's capture holds no calls")
