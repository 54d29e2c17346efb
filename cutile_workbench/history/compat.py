"""Were two runs measured under the same conditions? Pure functions over two provenances.

Contract of :func:`compare_provenance` (``a`` = candidate or newer run, ``b`` = baseline or older):
- ``flag`` differences (a ratio between the two is suspect; the text names both values):
  GPU model, driver version, CUDA driver version, MIG mode, a throttle *exposure* that differs
  beyond :data:`~cutile_workbench.clock_exposure.EXPOSURE_BOUND` (the share of each run's time NVML's
  power/thermal violation counters grew, when both runs carry the counters), SM or
  memory clocks at the end snapshot differing by more than ``clock_tolerance`` (5 % by default) of
  the larger one (compared only when neither snapshot is idle), and the harness (name, or a knob
  that changes what a sample measures set on both sides to different values: ``CUPTI``,
  ``CUDAGRAPH``, ``MODE``, ``WORKBENCH_CUPTI_*``, ...; ``CUDA_VISIBLE_DEVICES``/``CUDA_DEVICE_ORDER`` and the
  candidate-only ``DISABLE_FALLBACK`` excluded).
- ``toolchain`` flags (issue 36): tileiras, ptxas, the cutile-rs crate (version, commit), cuda-tile
  or cupti-python at different versions, compared only where both runs recorded it (older runs
  did not: no ``unknown`` entry for them, so nothing changes for a history without it).
- Throttling seen in a run (clock-event reasons at a snapshot, or violation counters that grew)
  is a ``note`` when the exposures are within the bound: heavy GEMMs hit the power cap routinely,
  and what decides a ratio is whether both sides ran at the same clocks (compared as above; when
  a run's clocks are not recorded the effect of its throttling is ``unknown``, never assumed).
- ``note`` differences (worth knowing, not disqualifying): another physical GPU of the same
  model (UUID), another host, a harness knob set on one side only, sampling knobs (``WARMUP``,
  ``REP``, ``MIN_REP``, ``INITIAL_REP``, ``MAX_REP``, and the clock-reading knobs ``WORKBENCH_CLOCKS``,
  ``WORKBENCH_DISCARD_THROTTLED``) set to different values.
- A fact missing on either side is listed in ``unknown`` ("MIG mode: not recorded for the
  baseline"); it is never treated as equal.
:func:`render_conditions_section` renders the performance.md section that states all of it. It
never writes a ``geomean_ratio=`` line nor a ``PASSED``/``FAILED``/``SKIPPED`` word.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from cutile_workbench.clock_exposure import EXPOSURE_BOUND
from cutile_workbench.history.provenance import Provenance
from cutile_workbench.history.provenance.gpu import ClockSnapshot
from cutile_workbench.history.provenance.toolchain import TOOLCHAIN_KEYS

DifferenceKind = Literal[
    "gpu_model",
    "driver",
    "cuda",
    "mig",
    "throttling",
    "clocks",
    "harness",
    "gpu_instance",
    "host",
    "toolchain",
]
#: which GPU a run used, and the runner's guard against a silent fallback to another backend (set for
#: the candidate only, by design): neither changes what a sample measures
_NOT_COMPARED_KNOBS = frozenset({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "DISABLE_FALLBACK"})
#: knobs that change how many samples are taken or how long the warm-up is, not what a sample
#: measures: a difference is a note (CUPTI, CUDAGRAPH, MODE and the WORKBENCH_CUPTI_* window
#: knobs change what is timed, and are flags)
_SAMPLING_KNOBS = frozenset(
    {
        "WARMUP",
        "REP",
        "MIN_REP",
        "INITIAL_REP",
        "MAX_REP",
        "DUMP_CUPTI_EVENTS",
        "WORKBENCH_CLOCKS",
        "WORKBENCH_DISCARD_THROTTLED",
    }
)


@dataclass(frozen=True)
class Difference:
    """One difference; ``a_value``/``b_value`` are the two sides' values as shown in ``text`` (for
    faces that phrase it shorter), None where the difference is about one side only (throttling)."""

    kind: DifferenceKind
    severity: Literal["flag", "note"]
    text: str
    a_value: str | None = None
    b_value: str | None = None


@dataclass(frozen=True)
class Comparability:
    """The differences between two runs' conditions, and what could not be compared."""

    a_label: str
    b_label: str
    differences: tuple[Difference, ...] = ()
    unknown: tuple[str, ...] = ()

    @property
    def flags(self) -> tuple[Difference, ...]:
        return tuple(d for d in self.differences if d.severity == "flag")

    @property
    def comparable(self) -> bool:
        """No flag-level difference (facts that are unknown do not count as differences)."""
        return not self.flags

    @property
    def checked(self) -> bool:
        """Both GPU model and driver are known on both sides (else "same conditions" would be a guess)."""
        return not any(u.startswith(("GPU:", "driver:", "all conditions:")) for u in self.unknown)

    def summary(self) -> str:
        """One line for a screen header or the CLI."""
        if self.flags:
            return f"not comparable ({self.a_label} vs {self.b_label}): " + "; ".join(
                d.text for d in self.flags
            )
        if not self.checked:
            return (
                f"conditions unknown ({self.a_label} vs {self.b_label}): GPU model or driver not recorded, "
                "comparability cannot be checked"
            )
        facts = list(dict.fromkeys(u.split(":", 1)[0] for u in self.unknown))
        tail = f"; not recorded: {', '.join(facts)}" if facts else ""
        return f"same conditions ({self.a_label} vs {self.b_label}){tail}"


def _throttle_text(prov: Provenance) -> str | None:
    seen = prov.throttling()
    if seen is None:
        return None
    return ", ".join(seen) if seen else "none"


def _missing(label: str, pairs: Sequence[tuple[str, object]]) -> str:
    who = [lbl for lbl, v in pairs if v is None]
    return f"{label}: not recorded for " + ("either run" if len(who) == len(pairs) else f"the {who[0]}")


def _end_snapshot(prov: Provenance) -> ClockSnapshot | None:
    return prov.after or prov.before


def compare_provenance(
    a: Provenance | None,
    b: Provenance | None,
    *,
    a_label: str = "candidate",
    b_label: str = "baseline",
    clock_tolerance: float = 0.05,
) -> Comparability:
    """Differences between ``a`` and ``b`` (see module doc)."""
    diffs: list[Difference] = []
    unknown: list[str] = []
    if a is None or b is None:
        missing = " and ".join(lbl for lbl, p in ((a_label, a), (b_label, b)) if p is None)
        return Comparability(a_label, b_label, (), (f"all conditions: no provenance for the {missing}",))

    def fact(
        kind: DifferenceKind,
        label: str,
        get: Callable[[Provenance], object],
        severity: Literal["flag", "note"] = "flag",
    ) -> None:
        va, vb = get(a), get(b)
        if va is None or vb is None:
            unknown.append(_missing(label, ((a_label, va), (b_label, vb))))
        elif va != vb:
            diffs.append(
                Difference(kind, severity, f"{label}: {a_label} {va} vs {b_label} {vb}", str(va), str(vb))
            )

    fact("gpu_model", "GPU", lambda p: p.gpu.name if p.gpu else None)
    fact("driver", "driver", lambda p: p.gpu.driver_version if p.gpu else None)
    fact("cuda", "CUDA (driver)", lambda p: p.gpu.cuda_driver_version if p.gpu else None)
    fact("mig", "MIG mode", lambda p: p.gpu.mig_mode if p.gpu else None)
    ta, tb = _throttle_text(a), _throttle_text(b)
    if ta is None or tb is None:
        unknown.append(_missing("throttling", ((a_label, ta), (b_label, tb))))
    ea, eb = a.throttle_exposure(), b.throttle_exposure()
    throttled = False
    for side, label, text, share in (("a", a_label, ta, ea), ("b", b_label, tb, eb)):
        if text is not None and text != "none":
            throttled = True
            run = label if label.endswith(" run") else f"{label} run"  # "the newer run", "the candidate run"
            exposure = f" ({share:.1%} of the run)" if share is not None else ""
            diffs.append(
                Difference(
                    "throttling",
                    "note",
                    f"throttling during the {run}: {text}{exposure}",
                    text if side == "a" else None,
                    text if side == "b" else None,
                )
            )
    if throttled and ea is not None and eb is not None and abs(ea - eb) > EXPOSURE_BOUND:
        diffs.append(
            Difference(
                "throttling",
                "flag",
                f"throttle exposure: {a_label} {ea:.1%} vs {b_label} {eb:.1%} of the run under "
                f"power/thermal violation, {abs(ea - eb) * 100:.0f} points apart "
                f"(bound {EXPOSURE_BOUND * 100:.0f})",
                f"{ea:.1%}",
                f"{eb:.1%}",
            )
        )
    n_unknown = len(unknown)
    _compare_clocks(a, b, a_label, b_label, clock_tolerance, diffs, unknown)
    if throttled and len(unknown) > n_unknown:
        unknown.append(
            "throttling effect: a run was throttled and its clocks are not recorded, so whether "
            "it ran slower cannot be judged"
        )
    _compare_harness(a, b, a_label, b_label, diffs, unknown)
    for key in TOOLCHAIN_KEYS:  # recorded since issue 36: compared where both runs carry it, else silent
        va, vb = a.toolchain.get(key), b.toolchain.get(key)
        if va and vb and va != vb:
            label = key.replace("_", "-")
            diffs.append(
                Difference("toolchain", "flag", f"{label}: {a_label} {va} vs {b_label} {vb}", va, vb)
            )
    fact("gpu_instance", "GPU UUID", lambda p: p.gpu.uuid if p.gpu else None, "note")
    fact("host", "host", lambda p: p.host, "note")
    return Comparability(a_label, b_label, tuple(diffs), tuple(unknown))


def _compare_clocks(
    a: Provenance,
    b: Provenance,
    a_label: str,
    b_label: str,
    tol: float,
    diffs: list[Difference],
    unknown: list[str],
) -> None:
    sa, sb = _end_snapshot(a), _end_snapshot(b)
    if sa is None or sb is None:
        unknown.append(_missing("clocks", ((a_label, sa), (b_label, sb))))
        return
    if sa.idle or sb.idle:
        unknown.append("clocks: a snapshot was taken while the GPU was idle (idle clocks say nothing)")
        return
    for label, va, vb in (
        ("SM clock", sa.sm_clock_mhz, sb.sm_clock_mhz),
        ("memory clock", sa.mem_clock_mhz, sb.mem_clock_mhz),
    ):
        if va is None or vb is None:
            unknown.append(_missing(label, ((a_label, va), (b_label, vb))))
        elif abs(va - vb) > tol * max(va, vb):
            diffs.append(
                Difference(
                    "clocks",
                    "flag",
                    f"{label}: {a_label} {va} MHz vs {b_label} {vb} MHz (more than {tol:.0%} apart)",
                    f"{va} MHz",
                    f"{vb} MHz",
                )
            )


def _compare_harness(
    a: Provenance, b: Provenance, a_label: str, b_label: str, diffs: list[Difference], unknown: list[str]
) -> None:
    ha, hb = a.harness, b.harness
    if ha is None or hb is None or "unknown" in (ha.name, hb.name):
        unknown.append("harness: not known for both runs")  # "unknown" = the suite's own, unnamed
        return
    if ha.name != hb.name:
        diffs.append(
            Difference(
                "harness", "flag", f"harness: {a_label} {ha.name} vs {b_label} {hb.name}", ha.name, hb.name
            )
        )
    for knob in sorted((set(ha.settings) | set(hb.settings)) - _NOT_COMPARED_KNOBS):
        va, vb = ha.settings.get(knob), hb.settings.get(knob)
        if va is not None and vb is not None and va != vb:
            diffs.append(
                Difference(
                    "harness",
                    "note" if knob in _SAMPLING_KNOBS else "flag",
                    f"{knob}: {a_label} {va} vs {b_label} {vb}",
                    f"{knob}={va}",
                    f"{knob}={vb}",
                )
            )
        elif (va is None) != (vb is None):
            who, val = (a_label, va) if va is not None else (b_label, vb)
            diffs.append(Difference("harness", "note", f"{knob}={val} set for the {who} only"))


# --------------------------------------------------------------------------- performance.md section


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts)) if ts is not None else "not recorded"


def _clocks(prov: Provenance) -> str:
    def one(s: ClockSnapshot | None) -> str:
        if s is None or s.sm_clock_mhz is None:
            return "?"
        return f"{s.sm_clock_mhz}/{s.mem_clock_mhz if s.mem_clock_mhz is not None else '?'}" + (
            " idle" if s.idle else ""
        )

    if prov.before is None and prov.after is None:
        return "not recorded"
    return f"{one(prov.before)} → {one(prov.after)} MHz"


def _short(unknown: str) -> str:
    """``"MIG mode: not recorded for either run"`` → ``"MIG mode (not recorded for either run)"``."""
    label, _, why = unknown.partition(": ")
    return f"{label} ({why})" if why else label


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def condition_rows(prov: Provenance | None) -> list[tuple[str, str]]:
    """(label, value) facts of one run, as the section's table shows them."""
    if prov is None:
        return [("provenance", "not recorded")]
    gpu = prov.gpu
    harness = prov.harness
    nr = "not recorded"
    knobs = " ".join(f"{k}={v}" for k, v in sorted(harness.settings.items())) if harness else ""
    return [
        ("GPU", (gpu.name or nr) if gpu else prov.unknown.get("gpu", nr)),
        ("driver", (gpu.driver_version or nr) if gpu else nr),
        ("CUDA (driver)", (gpu.cuda_driver_version or nr) if gpu else nr),
        ("MIG mode", (gpu.mig_mode or nr) if gpu else nr),
        ("throttling", _throttle_text(prov) or "not recorded"),
        ("SM/memory clock (start → end)", _clocks(prov)),
        ("harness", f"{harness.name}{' ' + knobs if knobs else ''}" if harness else "not recorded"),
        ("recorded", _when(prov.started_at)),
        ("host", prov.host or "not recorded"),
    ]


def render_conditions_section(
    candidate: Provenance | None, baselines: Sequence[tuple[str, Provenance | None, Comparability]]
) -> str:
    """performance.md's "Measurement conditions" section: facts per run and each pair's verdict."""
    if not baselines:
        return ""
    cand_rows = condition_rows(candidate)
    header = (
        "| | candidate | " + " | ".join(f"baseline ({_cell(name)})" for name, _p, _c in baselines) + " |\n"
    )
    rule = "|---|---|" + "---|" * len(baselines) + "\n"
    base_rows = [dict(condition_rows(p)) for _n, p, _c in baselines]
    body = ""
    for label, value in cand_rows:
        body += f"| {label} | {_cell(value)} | " + " | ".join(
            _cell(r.get(label, "not recorded")) for r in base_rows
        )
        body += " |\n"
    lines = ["### Measurement conditions (candidate vs baseline)\n", "\n", header, rule, body, "\n"]
    for name, _p, comp in baselines:
        if comp.flags:
            lines.append(
                f"- **Not comparable** with `{_cell(name)}`: "
                + "; ".join(_cell(d.text) for d in comp.flags)
                + ".\n"
            )
        elif not comp.checked:
            lines.append(
                f"- Comparability with `{_cell(name)}` cannot be checked: the GPU model or driver of a "
                "run is not recorded.\n"
            )
        else:
            lines.append(
                f"- Comparable with `{_cell(name)}`: no difference in GPU model, driver, MIG mode, "
                "throttling, clocks or harness among the facts recorded for both.\n"
            )
        notes = [d.text for d in comp.differences if d.severity == "note"]
        if notes:
            lines.append("  Notes: " + "; ".join(_cell(n) for n in notes) + ".\n")
        if comp.unknown:
            lines.append("  Not compared: " + "; ".join(_cell(_short(u)) for u in comp.unknown) + ".\n")
    return "".join(lines)
