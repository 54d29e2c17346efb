"""Which kernel each side ran for each config, and whether the candidate dispatches the right variant.

Contract:
- :func:`kernel_stem` reduces a kernel name to the function it came from: C++ names demangled/
  shortened (``launches.short_kernel_name``), cuTile Python's specialization suffix dropped
  (``rms_norm_tile_kernel_Kt1_A2bf16…`` → ``rms_norm_tile_kernel``), cutile-rs's ``_entry`` dropped
  (``silu_and_mul_kernel_entry`` → ``silu_and_mul_kernel``), leading underscores dropped, lower case.
- :func:`variant_of_kernel` maps a stem to the analysis.json variant whose ``kernel_function`` it names:
  equal stems first, else the longest ``kernel_function`` stem that is a suffix of it (cutile-rs's
  ``non_persistent_matmul_kernel`` ↔ cuTile's ``_matmul_kernel``); None when nothing or a tie matches.
- :func:`config_kernels` builds one :class:`ConfigKernels` per matched row from ONE source: the
  per-launch captures when both sides have a set for the row (main kernel of the common signature),
  else the perf logs' ``kernel_name`` / top ``kernel_times`` row.
- :func:`dispatch_findings` (FIXABLE "dispatch picks wrong variant", confidence high):
  (a) the candidate runs one kernel for configs of two or more variants whose reference kernels
  differ; (b) a config of variant V runs a candidate kernel that names another variant's
  ``kernel_function``. A variant whose reference kernel is unknown is never used for (a).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cutile_workbench.artifacts.kernel_names import short_kernel_name
from cutile_workbench.evidence.launches import pick_summaries
from cutile_workbench.model import Finding, LaunchSet, PerfLog, PerfRecord, RatioRow

_CUTILE_SUFFIX = re.compile(r"_K[a-z]\d+_[A-Z].*$")  # cuTile Python's mangled specialization suffix


def kernel_stem(name: str) -> str:
    """See the module docstring."""
    stem = short_kernel_name(name) if name.startswith("_Z") or "(" in name or "<" in name else name
    stem = stem.split("<", 1)[0].split("(", 1)[0].strip()
    stem = _CUTILE_SUFFIX.sub("", stem)
    if stem.endswith("_entry"):
        stem = stem[: -len("_entry")]
    return stem.lstrip("_").lower()


def variant_of_kernel(name: str, kernel_functions: Mapping[str, str]) -> str | None:
    """The variant whose ``kernel_function`` the kernel ``name`` runs (see the module docstring)."""
    stem = kernel_stem(name)
    fn_stems = {v: kernel_stem(f) for v, f in kernel_functions.items() if f}
    exact = [v for v, s in fn_stems.items() if s == stem]
    if len(exact) == 1:
        return exact[0]
    if exact:
        return None
    suffix = sorted(((len(s), v) for v, s in fn_stems.items() if s and stem.endswith("_" + s)), reverse=True)
    if not suffix or (len(suffix) > 1 and suffix[0][0] == suffix[1][0]):
        return None
    return suffix[0][1]


@dataclass(frozen=True)
class ConfigKernels:
    """The main kernel each side ran for one config."""

    params: str
    variant: str | None  # from analysis.json config_to_variant (via the E row)
    candidate: str | None
    baseline: str | None
    source: str  # "cupti" | "kineto" | "kernel_times"
    candidate_variant: str | None = None  # variant whose kernel_function the candidate kernel names
    baseline_variant: str | None = None

    @property
    def candidate_stem(self) -> str | None:
        return kernel_stem(self.candidate) if self.candidate else None

    @property
    def baseline_stem(self) -> str | None:
        return kernel_stem(self.baseline) if self.baseline else None


def record_kernel(rec: PerfRecord | None) -> str | None:
    """The perf record's main kernel: ``kernel_name``, else its largest ``kernel_times`` row."""
    fwd = rec.forward if rec is not None else None
    if fwd is None:
        return None
    if fwd.kernel_name:
        return fwd.kernel_name
    if fwd.kernel_times:
        return max(fwd.kernel_times, key=lambda k: k.self_time_us).name
    return None


def config_kernels(
    rows: Sequence[RatioRow],
    *,
    launch_sets: Sequence[LaunchSet],
    candidate_backend: str,
    candidate_records: Mapping[tuple[str, str], PerfRecord],
    baseline_records: Mapping[str, Mapping[tuple[str, str], PerfRecord]],
    kernel_functions: Mapping[str, str],
) -> list[ConfigKernels]:
    """One entry per matched row (see the module docstring for the single-source rule)."""
    out = []
    for row in rows:
        if row.status != "OK":
            continue
        cs, bs = pick_summaries(launch_sets, row, candidate_backend)
        cand: str | None
        base: str | None
        if cs is not None and bs is not None:
            cand, base, source = cs.main_kernel, bs.main_kernel, cs.source
        else:
            cand = record_kernel(candidate_records.get((row.func_key, row.params)))
            base = record_kernel(
                (baseline_records.get(row.baseline_backend or "") or {}).get((row.func_key, row.params))
            )
            source = "kernel_times"
        out.append(
            ConfigKernels(
                row.params,
                row.variant,
                cand,
                base,
                source,
                variant_of_kernel(cand, kernel_functions) if cand else None,
                variant_of_kernel(base, kernel_functions) if base else None,
            )
        )
    return out


def dispatch_findings(entries: Sequence[ConfigKernels], evidence: Sequence[str] = ()) -> list[Finding]:
    """Rules (a) and (b) of the module docstring."""
    out: list[Finding] = []
    by_variant: dict[str, list[ConfigKernels]] = {}
    for e in entries:
        if e.variant is not None:
            by_variant.setdefault(e.variant, []).append(e)
    ref_stems = {v: {e.baseline_stem for e in es if e.baseline_stem} for v, es in by_variant.items()}
    cand_stems = {v: {e.candidate_stem for e in es if e.candidate_stem} for v, es in by_variant.items()}
    # (a) one candidate kernel across variants whose reference kernels differ
    flagged: set[str] = set()
    for stem in sorted({s for ss in cand_stems.values() for s in ss}):
        variants = sorted(v for v, ss in cand_stems.items() if stem in ss and ref_stems.get(v))
        if len(variants) < 2:
            continue
        refs = [ref_stems[v] for v in variants]
        if all(refs[i].isdisjoint(refs[j]) for i in range(len(refs)) for j in range(i + 1, len(refs))):
            flagged.add(stem)
            shown = "; ".join(f"{v}: `{', '.join(sorted(ref_stems[v]))}`" for v in variants)
            configs = [e.params for e in entries if e.variant in variants and e.candidate_stem == stem]
            out.append(
                Finding(
                    "dispatch",
                    f"dispatch picks the wrong variant: the candidate runs `{stem}` for the configs of "
                    f"variants {', '.join(variants)}, whose reference kernels differ ({shown})",
                    True,
                    tuple(evidence),
                    "high",
                    {
                        "rule": "one_kernel_for_variants",
                        "kernel": stem,
                        "variants": variants,
                        "configs": configs,
                        "source": entries[0].source if entries else None,
                    },
                )
            )
    # (b) a config of variant V hits the kernel of variant W
    for e in entries:
        if e.variant is None or e.candidate_variant is None or e.candidate_variant == e.variant:
            continue
        if e.candidate_stem in flagged:
            continue
        out.append(
            Finding(
                "dispatch",
                f"dispatch picks the wrong variant: config {e.params} belongs to variant {e.variant} "
                f"(config_to_variant) but the candidate ran `{e.candidate_stem}`, the kernel of variant "
                f"{e.candidate_variant}"
                + (f" (the reference ran `{e.baseline_stem}`)" if e.baseline_stem else ""),
                True,
                tuple(evidence),
                "high",
                {
                    "rule": "config_hits_other_variant",
                    "config": e.params,
                    "variant": e.variant,
                    "ran_variant": e.candidate_variant,
                    "kernel": e.candidate_stem,
                    "source": e.source,
                },
            )
        )
    return out


def index_records(log: PerfLog | None) -> dict[tuple[str, str], PerfRecord]:
    """The candidate log's records by ``(func_key, params)`` (first one kept, as E does)."""
    out: dict[tuple[str, str], PerfRecord] = {}
    for rec in log.records if log is not None else ():
        out.setdefault(rec.row_key, rec)
    return out


def kernel_functions_of(analysis: Any) -> dict[str, str]:
    """``{variant_name: kernel_function}`` of analysis.json (empty without variants)."""
    return {
        v.variant_name: v.kernel_function
        for v in getattr(analysis, "kernel_variants", ()) or ()
        if v.kernel_function
    }
