"""Who the numbers compare: a stand-in candidate or a plain-Triton baseline is named as one everywhere.

Contract of :func:`stand_ins_of` (pure; the faces get it through ``services.stand_ins``):
- The candidate is a **stand-in** when the candidate log's frameworks are not ``cutile-rs`` (the
  records say so: e.g. ``cutile`` in the cutile-rs slot); without a candidate log, when
  ``session.json`` names a ``candidate`` other than cutile-rs. Nothing known: not called a stand-in,
  and ``candidate_known`` is False.
- A ``triton_tileir`` baseline is **plain Triton** when ``session.json`` says so (a recorded profile
  session's ``baseline: "triton"``), **Triton-TileIR** when ``ENABLE_TILE=1`` is recorded for its run
  (``runs.baseline_triton_tileir.env_overrides``, or the profile's ``harness_env``), else
  **unknown** ("ENABLE_TILE=1 not recorded for its run"): never guessed either way.
- :meth:`StandIns.lines` are the sentences every face prints; :meth:`StandIns.candidate_label` and
  :meth:`StandIns.baseline_label` are the short forms for a column header or a cell. None of them
  holds a word a TileGym validator counts (``PASSED``/``FAILED``/``VERDICT:``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

TritonKind = Literal["tileir", "plain", "unknown"]
#: the candidate framework's spellings (record key, test-id token)
_CUTILE_RS = frozenset({"cutile-rs", "cutile_rs"})


@dataclass(frozen=True)
class StandIns:
    candidate: tuple[str, ...] = ()  # the candidate's frameworks when they are not cutile-rs
    candidate_source: str = ""  # where that was read ("the candidate log", "session.json candidate")
    candidate_known: bool = True
    triton_tileir: TritonKind | None = None  # None: no triton_tileir baseline in use
    triton_why: str = ""

    @property
    def stand_in(self) -> bool:
        return bool(self.candidate)

    def candidate_label(self) -> str:
        """``cutile-rs`` or ``cutile (stand-in)``: a column header's candidate name."""
        return f"{', '.join(self.candidate)} (stand-in)" if self.candidate else "cutile-rs"

    def baseline_label(self, key: str) -> str:
        """A baseline key as a cell shows it: ``triton_tileir (plain Triton)`` when it is."""
        if key == "triton_tileir" and self.triton_tileir == "plain":
            return "triton_tileir (plain Triton)"
        if key == "triton_tileir" and self.triton_tileir == "unknown":
            return "triton_tileir (TileIR not confirmed)"
        return key

    def lines(self) -> list[str]:
        out = []
        if self.candidate:
            out.append(
                f"STAND-IN candidate: {', '.join(self.candidate)} ({self.candidate_source}), not cutile-rs: "
                "these numbers compare a stand-in, not a cutile-rs port"
            )
        elif not self.candidate_known:
            out.append(
                "candidate: unknown (no candidate log and session.json names none): it may not be cutile-rs"
            )
        if self.triton_tileir == "plain":
            out.append(f"triton_tileir baseline: plain Triton, not Triton-TileIR ({self.triton_why})")
        elif self.triton_tileir == "unknown":
            out.append(f"triton_tileir baseline: Triton-TileIR not confirmed ({self.triton_why})")
        return out


def _enable_tile(env: Any) -> bool:
    return isinstance(env, Mapping) and str(env.get("ENABLE_TILE", "")) == "1"


def stand_ins_of(
    candidate_frameworks: Iterable[str] | None,
    session: Mapping[str, Any] | None,
    baseline_keys: Iterable[str] = (),
    *,
    frameworks_from: str = "the candidate log",
) -> StandIns:
    """What is a stand-in here (module contract); ``frameworks_from`` names where the frameworks were read."""
    session = session or {}
    frameworks = sorted(set(candidate_frameworks or ()))
    if frameworks:
        others = tuple(f for f in frameworks if f not in _CUTILE_RS)
        cand, source, known = (
            others,
            f"{frameworks_from}'s framework" + ("s" if len(others) > 1 else ""),
            True,
        )
    elif isinstance(session.get("candidate"), str) and session["candidate"]:
        name = str(session["candidate"])
        cand = () if name in _CUTILE_RS else (name,)
        source, known = "session.json candidate", True
    else:
        cand, source, known = (), "", False
    kind: TritonKind | None = None
    why = ""
    if "triton_tileir" in set(baseline_keys):
        runs = session.get("runs") if isinstance(session.get("runs"), Mapping) else {}
        run = runs.get("baseline_triton_tileir") if isinstance(runs, Mapping) else None
        if session.get("baseline") == "triton":
            kind, why = "plain", "session.json: the baseline is plain Triton standing in for Triton-TileIR"
        elif _enable_tile(session.get("harness_env")) or (
            isinstance(run, Mapping) and _enable_tile(run.get("env_overrides"))
        ):
            kind, why = "tileir", "ENABLE_TILE=1 recorded for its run"
        else:
            kind, why = "unknown", "ENABLE_TILE=1 not recorded for its run"
    return StandIns(cand, source, known, kind, why)
