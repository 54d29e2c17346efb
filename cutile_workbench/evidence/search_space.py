"""Seed F step 3: the candidate's autotune search space vs the reference's, read statically.

Contract:
- :func:`wrapper_spaces` reads a cutile-rs wrapper (``ops/cutile_rs/<k>.py``) with ``ast`` only (the
  shared :class:`~cutile_workbench.checks.static_eval.StaticEvaluator`): the config functions that
  feed ``autotune_launch(configs=...)`` are *run* statically with ``torch.cuda.get_device_capability()``
  answered by the session's GPU, so arch branches resolve as on that GPU (the "for sm100" comments in
  the cutile-rs wrappers change nothing). :func:`reference_wrapper_spaces` does the same for a
  cuTile wrapper (``ops/cutile/<k>.py``): the generators passed to ``exhaustive_search``, each paired
  with the ``@ct.kernel`` it tunes. :func:`analysis_spaces` turns analysis.json ``autotune_configs``
  (top level and per variant) into spaces, :func:`best_configs` its ``best_config``.
- Knob names are canonical (:data:`KNOB_ALIASES`: ``BM``/``TILE_M``/``TILE_SIZE_M`` → ``tile_m``,
  ``NUM_CTAS``/``NUM_CTA_IN_CGA``/``num_ctas`` → ``num_ctas``, ``LOAD_LATENCY``/``num_stages`` →
  ``latency`` …); ``None`` and ``-1`` of a compile-option knob are ``"auto"``.
- :func:`compare_spaces`: a reference config is *covered* when some candidate config has the same
  value for every knob both spaces carry. A knob the reference sets (non-auto) but the candidate space
  does not carry is checked against the wrapper's module constant of that name (``_GROUP_SIZE_M = 8``);
  one the reference *varies* and the candidate cannot tune is an absent knob.
- :func:`audit_search_space` pairs spaces per variant (analysis ``kernel_variants``: reference by the
  kernel ``exhaustive_search`` tunes = ``kernel_function``; candidate by the config function's name
  tokens vs the variant name) and returns a :class:`SearchSpaceAudit`; the reference side is
  analysis.json's configs when it lists them for that variant, else the reference wrapper's branch.
  Whether a missing config *decides* FIXABLE (a real kernel-time gap) is :mod:`cutile_workbench.stages.f.diagnosis`'s
  rule; :meth:`SearchSpaceAudit.findings` says what is missing and how sure that is.
Unreadable wrappers raise ``InputError`` (file, line); a config function the evaluator cannot model
becomes a note naming its line, never a guess.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.checks.static_eval import Assumptions, Namespace, StaticEvaluator, Unresolvable
from cutile_workbench.model import Finding
from cutile_workbench.pystatic.pysource import call_name as _call_name
from cutile_workbench.pystatic.pysource import display_path as _display
from cutile_workbench.pystatic.pysource import enclosing_function, parse_python_source

#: canonical knob → spellings (compared case-insensitively, leading underscores ignored)
KNOB_ALIASES: dict[str, tuple[str, ...]] = {
    "tile_m": ("bm", "tile_m", "tile_size_m", "block_m", "block_size_m"),
    "tile_n": ("bn", "tile_n", "tile_size_n", "block_n", "block_size_n"),
    "tile_k": ("bk", "tile_k", "tile_size_k", "block_k", "block_size_k"),
    "tile_d": ("bd", "tile_d", "tile_size_d", "block_d"),
    "tile_size": ("tile_size", "block_size", "tile", "block"),
    "group_size_m": ("group_size_m", "group_m"),
    "num_ctas": ("num_ctas", "num_cta", "num_cta_in_cga", "num_ctas_in_cga", "cga_size"),
    "occupancy": ("occupancy", "occ"),
    "latency": ("latency", "load_latency", "num_stages", "stages"),
    "num_warps": ("num_warps", "simt_num_warps", "simt_num_warps_in_cta"),
}
_ALIAS_TO_KNOB = {alias: knob for knob, aliases in KNOB_ALIASES.items() for alias in aliases}
#: knobs whose None / -1 / 0 mean "let the compiler choose"
COMPILE_OPTION_KNOBS = frozenset({"num_ctas", "occupancy", "latency", "num_warps"})
AUTO = "auto"
_GENERIC_TOKENS = frozenset(
    {"configs", "config", "autotune", "get", "cfg", "cfgs", "kernel", "tune", "tuning", "space", "search"}
)


def canonical_knob(name: str) -> str:
    low = name.lstrip("_").lower()
    return _ALIAS_TO_KNOB.get(low, low)


def _normal_value(knob: str, value: Any) -> Any:
    if knob in COMPILE_OPTION_KNOBS and (value is None or value == -1 or (value == 0 and knob != "latency")):
        return AUTO
    if isinstance(value, bool) or not isinstance(value, float):
        return value
    return int(value) if value.is_integer() else value


@dataclass(frozen=True)
class TuneConfig:
    """One autotune config, canonical knob → normalized value (sorted by knob)."""

    knobs: tuple[tuple[str, Any], ...]
    where: str = ""  # file:line (or analysis.json key) it came from

    @classmethod
    def of(cls, raw: Mapping[str, Any], where: str = "") -> TuneConfig:
        knobs: dict[str, Any] = {}
        for k, v in raw.items():
            knob = canonical_knob(str(k))
            knobs[knob] = _normal_value(knob, v)
        return cls(tuple(sorted(knobs.items())), where)

    def get(self, knob: str) -> Any:
        return dict(self.knobs).get(knob)

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.knobs)

    def matches(self, other: TuneConfig, on: Iterable[str]) -> bool:
        mine, theirs = dict(self.knobs), dict(other.knobs)
        return all(mine.get(k) == theirs.get(k) for k in on)


@dataclass(frozen=True)
class ConfigSpace:
    """The configs one function (or analysis.json list) offers for one variant."""

    origin: str  # human: "src/tilegym/ops/cutile_rs/matmul.py:57 _static_persistent_configs()"
    configs: tuple[TuneConfig, ...]
    variant: str | None = None
    function: str | None = None
    kernel: str | None = None  # the kernel it tunes, when the source says (reference wrappers)
    constants: Mapping[str, Any] = field(
        default_factory=dict, compare=False, hash=False
    )  # canonical knob → value
    spelling: Mapping[str, str] = field(
        default_factory=dict, compare=False, hash=False
    )  # canonical → source name

    def spelled(self, config: TuneConfig) -> str:
        """``config`` written as this space's own source would (``SimpleNamespace(BM=128, …)``), its knobs only."""
        if not self.spelling:
            return config.label
        items = [(self.spelling[k], v) for k, v in config.knobs if k in self.spelling]
        order = list(self.spelling.values())
        items.sort(key=lambda kv: order.index(kv[0]))
        return "SimpleNamespace(" + ", ".join(f"{k}={None if v == AUTO else v!r}" for k, v in items) + ")"

    @property
    def knobs(self) -> frozenset[str]:
        return frozenset(k for c in self.configs for k, _ in c.knobs)

    def values(self, knob: str) -> list[Any]:
        seen: dict[Any, None] = {}
        for c in self.configs:
            if knob in dict(c.knobs):
                seen.setdefault(c.get(knob), None)
        return list(seen)


@dataclass(frozen=True)
class SpaceComparison:
    """Candidate vs reference space of one variant."""

    variant: str | None
    candidate: ConfigSpace
    reference: ConfigSpace
    compared_on: tuple[str, ...]
    missing: tuple[TuneConfig, ...]  # reference configs no candidate config covers
    absent_knobs: Mapping[
        str, tuple[Any, ...]
    ]  # knob the reference varies → its values; candidate can't tune it
    fixed_knobs: Mapping[
        str, str
    ]  # knob the reference sets to one value, candidate lacks → how it is handled
    best: TuneConfig | None = None
    best_source: str | None = None
    best_present: bool | None = None  # None: no best config known

    @property
    def best_index_in_missing(self) -> int | None:
        """Which of :attr:`missing` is the reference best config (matched on the best config's knobs)."""
        if self.best is None or self.best_present is not False:
            return None
        on = [k for k, _ in self.best.knobs]
        return next((i for i, m in enumerate(self.missing) if m.matches(self.best, on)), None)

    @property
    def covers_reference(self) -> bool:
        return not self.missing and not self.absent_knobs and self.best_present is not False


@dataclass
class SearchSpaceAudit:
    """Every comparison F could make, plus what stopped the others."""

    capability: tuple[int, int]
    capability_source: str
    comparisons: list[SpaceComparison] = field(default_factory=list)
    candidate_spaces: list[ConfigSpace] = field(default_factory=list)
    reference_spaces: list[ConfigSpace] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def for_variant(self, variant: str | None) -> SpaceComparison | None:
        exact = [c for c in self.comparisons if c.variant == variant]
        if exact:
            return exact[0]
        return self.comparisons[0] if len(self.comparisons) == 1 else None

    def findings(self, evidence: Sequence[str] = ()) -> list[Finding]:
        """One ``config`` finding per comparison; ``fixable`` means "would be fixable": diagnosis lets it
        decide only with a real per-launch gap (seed step 3)."""
        out: list[Finding] = []
        for c in self.comparisons:
            where = tuple(e for e in (c.candidate.origin, c.reference.origin, *evidence) if e)
            name = c.variant or "(single variant)"
            details: dict[str, Any] = {
                "rule": "search_space",
                "variant": c.variant,
                "missing": [m.label for m in c.missing],
                "missing_as_candidate": [c.candidate.spelled(m) for m in c.missing],
                "best_as_candidate": c.candidate.spelled(c.best) if c.best else None,
                "absent_knobs": {k: list(v) for k, v in c.absent_knobs.items()},
                "best": c.best.label if c.best else None,
                "best_present": c.best_present,
                "best_index_in_missing": c.best_index_in_missing,
                "candidate_configs": len(c.candidate.configs),
                "reference_configs": len(c.reference.configs),
                "reference_origin": c.reference.origin,
                "candidate_origin": c.candidate.origin,
                "capability": f"sm_{self.capability[0]}{self.capability[1]}",
            }
            if c.covers_reference:
                text = (
                    f"search space of {name}: the candidate's {len(c.candidate.configs)} config(s) cover the "
                    f"reference's {len(c.reference.configs)} (knobs {', '.join(c.compared_on) or 'none'})"
                )
                if c.best_present:
                    text += f", including the reference best config ({c.best.label if c.best else ''})"
                out.append(Finding("config", text, False, where, "high", details))
                continue
            parts = []
            if c.best_present is False and c.best is not None:
                parts.append(f"the reference best config ({c.best.label}, {c.best_source}) is absent")
            if c.missing:
                parts.append(
                    f"{len(c.missing)} of the reference's {len(c.reference.configs)} config(s) are absent"
                )
            if c.absent_knobs:
                parts.append(
                    "knob(s) the reference tunes but the candidate cannot: "
                    + ", ".join(f"{k} {list(v)}" for k, v in c.absent_knobs.items())
                )
            conf = "high" if c.best_present is False else "medium"
            text = (
                f"search space of {name} ({self.capability_source}): candidate {len(c.candidate.configs)} "
                f"config(s) vs reference {len(c.reference.configs)}: " + "; ".join(parts)
            )
            out.append(Finding("config", text, True, where, conf, details))  # type: ignore[arg-type]
        return out


# --------------------------------------------------------------------------- reading sources


def _evaluator(tree: ast.Module, capability: tuple[int, int]) -> StaticEvaluator:
    ev = StaticEvaluator(Assumptions(device_capability=capability))
    ev.run_body(tree.body)
    return ev


def _spelling(ev: StaticEvaluator, fn: ast.FunctionDef) -> dict[str, str]:
    spelling: dict[str, str] = {}
    for item in ev.run_function(fn).items:
        raw = item.as_dict() if isinstance(item, Namespace) else item if isinstance(item, Mapping) else {}
        for k in raw:
            spelling.setdefault(canonical_knob(str(k)), str(k))
    return spelling


def _configs_of(ev: StaticEvaluator, fn: ast.FunctionDef, display: str) -> tuple[TuneConfig, ...]:
    items = ev.run_function(fn).items
    out = []
    for item in items:
        if isinstance(item, Namespace):
            out.append(TuneConfig.of(item.as_dict(), f"{display}:{item.line}"))
        elif isinstance(item, Mapping):
            out.append(TuneConfig.of(item, f"{display}:{fn.lineno}"))
        else:
            raise Unresolvable(f"{fn.name}() yields {type(item).__name__}, not a config", fn.lineno)
    return tuple(out)


def _functions_called(expr: ast.AST, functions: Mapping[str, ast.FunctionDef]) -> list[str]:
    return [
        n.func.id
        for n in ast.walk(expr)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in functions
    ]


def _module_constants(ev: StaticEvaluator) -> dict[str, Any]:
    """Module constants spelled like a knob (``_GROUP_SIZE_M = 8``) → canonical knob → value."""
    out: dict[str, Any] = {}
    for name, value in ev.names.items():
        knob = canonical_knob(name)
        if (
            knob in KNOB_ALIASES
            and isinstance(value, (int, float, type(None)))
            and not isinstance(value, bool)
        ):
            out[knob] = _normal_value(knob, value)
    return out


def wrapper_spaces(path: Path, capability: tuple[int, int] = (9, 0)) -> tuple[list[ConfigSpace], list[str]]:
    """Config spaces of a cutile-rs wrapper: the functions that feed ``autotune_launch(configs=)``."""
    path = Path(path)
    _src, tree = parse_python_source(path, "cutile-rs wrapper")
    display = _display(path)
    ev = _evaluator(tree, capability)
    constants = _module_constants(ev)
    names: list[str] = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call) and _call_name(n) == "autotune_launch"):
        arg = next(
            (k.value for k in call.keywords if k.arg == "configs"),
            call.args[1] if len(call.args) > 1 else None,
        )
        if arg is None:
            continue
        found = _functions_called(arg, ev.functions)
        if isinstance(arg, ast.Name):  # configs = _a() if persistent else _b()  (or an if/else)
            scope = enclosing_function(tree, call)
            for node in ast.walk(scope) if scope else ():
                if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == arg.id for t in node.targets
                ):
                    found += _functions_called(node.value, ev.functions)
        names += [n for n in found if n not in names]
    notes: list[str] = []
    if not names:
        names = [n for n in ev.functions if "config" in n.lower()]
        if names:
            notes.append(
                f"{display}: no autotune_launch(configs=...) resolved; read {', '.join(names)} by name"
            )
    spaces = []
    for name in names:
        fn = ev.functions[name]
        try:
            spaces.append(
                ConfigSpace(
                    f"{display}:{fn.lineno} {name}()",
                    _configs_of(ev, fn, display),
                    function=name,
                    constants=constants,
                    spelling=_spelling(ev, fn),
                )
            )
        except Unresolvable as exc:
            notes.append(
                f"{display}:{exc.line or fn.lineno}: {name}() cannot be evaluated statically ({exc})"
            )
    if not spaces and not notes:
        notes.append(f"{display}: no autotune configs (no autotune_launch, no config function)")
    return spaces, notes


def reference_wrapper_spaces(
    path: Path, capability: tuple[int, int] = (9, 0)
) -> tuple[list[ConfigSpace], list[str]]:
    """Config spaces of a reference cuTile wrapper: ``exhaustive_search(list(F()), stream, grid, KERNEL, …)``."""
    path = Path(path)
    _src, tree = parse_python_source(path, "reference wrapper")
    display = _display(path)
    ev = _evaluator(tree, capability)
    pairs: list[tuple[str, str | None]] = []
    for call in (
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and _call_name(n) == "exhaustive_search"
    ):
        first = (
            call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "configs"), None)
        )
        kernel_node = (
            call.args[3]
            if len(call.args) > 3
            else next((k.value for k in call.keywords if k.arg == "kernel"), None)
        )
        kernel = kernel_node.id if isinstance(kernel_node, ast.Name) else None
        for name in _functions_called(first, ev.functions) if first is not None else []:
            if (name, kernel) not in pairs:
                pairs.append((name, kernel))
    notes: list[str] = []
    if not pairs:
        pairs = [(n, None) for n in ev.functions if "config" in n.lower()]
    spaces = []
    for name, kernel in pairs:
        fn = ev.functions[name]
        try:
            spaces.append(
                ConfigSpace(
                    f"{display}:{fn.lineno} {name}()",
                    _configs_of(ev, fn, display),
                    function=name,
                    kernel=kernel,
                )
            )
        except Unresolvable as exc:
            notes.append(
                f"{display}:{exc.line or fn.lineno}: {name}() cannot be evaluated statically ({exc})"
            )
    return spaces, notes


def analysis_spaces(analysis: Any, where: str = "reference/analysis.json") -> list[ConfigSpace]:
    """analysis.json configs: one space per variant that lists some, plus the top-level list."""
    if analysis is None:
        return []
    out = []
    for i, v in enumerate(getattr(analysis, "kernel_variants", ()) or ()):
        if v.autotune_configs:
            out.append(
                ConfigSpace(
                    f"{where} kernel_variants[{i}].autotune_configs",
                    tuple(
                        TuneConfig.of(c, f"{where} kernel_variants[{i}].autotune_configs[{j}]")
                        for j, c in enumerate(v.autotune_configs)
                    ),
                    variant=v.variant_name,
                    kernel=v.kernel_function,
                )
            )
    top = getattr(analysis, "autotune_configs", ()) or ()
    if top:
        out.append(
            ConfigSpace(
                f"{where} autotune_configs",
                tuple(TuneConfig.of(c, f"{where} autotune_configs[{j}]") for j, c in enumerate(top)),
            )
        )
    return out


def best_configs(
    analysis: Any, where: str = "reference/analysis.json"
) -> dict[str | None, tuple[TuneConfig, str]]:
    """analysis.json ``best_config``: ``{variant: cfg}`` or one flat cfg (key None)."""
    best = getattr(analysis, "best_config", None) if analysis is not None else None
    if not isinstance(best, Mapping) or not best:
        return {}
    if all(isinstance(v, Mapping) for v in best.values()):
        return {
            str(k): (TuneConfig.of(v, f"{where} best_config.{k}"), f"{where} best_config.{k}")
            for k, v in best.items()
        }
    return {None: (TuneConfig.of(best, f"{where} best_config"), f"{where} best_config")}


# --------------------------------------------------------------------------- pairing + comparison


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", name.lower()) if t and t not in _GENERIC_TOKENS}


def _kernel_stem(name: str) -> str:
    return name.lstrip("_").lower()


def match_variant(function: str, variants: Sequence[str], kernel_tokens: Iterable[str] = ()) -> str | None:
    """The variant whose name tokens best match a config function's name (None when tied/none).

    A ``non_<x>`` variant is the negation of ``<x>``: it never matches a function lacking ``non``."""
    ftoks = _tokens(function) - set(kernel_tokens)
    scored = []
    for v in variants:
        vtoks = _tokens(v)
        if "non" in vtoks and "non" not in ftoks:
            continue
        if "non" in ftoks and "non" not in vtoks:
            continue
        overlap = len(ftoks & vtoks)
        if overlap:
            scored.append((overlap / len(ftoks | vtoks), v))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    return scored[0][1]


def _pair_by_name(
    cand: Sequence[ConfigSpace], refs: Sequence[ConfigSpace], kernel_tokens: Iterable[str]
) -> list[tuple[ConfigSpace, ConfigSpace | None]]:
    """Candidate ↔ reference config functions by name tokens; one leftover on each side pairs up."""
    # a reference generator's own name may say nothing (``_bmm_autotune_configs``): add its kernel's
    names = [f"{r.function or ''}_{r.kernel or ''}" for r in refs]
    out: list[tuple[ConfigSpace, ConfigSpace | None]] = []
    used: set[int] = set()
    for s in cand:
        hit = match_variant(s.function or "", names, kernel_tokens)
        idx = names.index(hit) if hit is not None else None
        if idx is not None and idx not in used:
            used.add(idx)
            out.append((s, refs[idx]))
        else:
            out.append((s, None))
    left = [i for i in range(len(refs)) if i not in used]
    unpaired = [k for k, (_s, r) in enumerate(out) if r is None]
    if len(left) == 1 and len(unpaired) == 1:
        out[unpaired[0]] = (out[unpaired[0]][0], refs[left[0]])
    return out


def compare_spaces(
    candidate: ConfigSpace,
    reference: ConfigSpace,
    variant: str | None,
    best: tuple[TuneConfig, str] | None = None,
) -> SpaceComparison:
    """See the module docstring (coverage on shared knobs, fixed and absent knobs, best config)."""
    shared = tuple(sorted(candidate.knobs & reference.knobs))
    missing = tuple(r for r in reference.configs if not any(c.matches(r, shared) for c in candidate.configs))
    absent: dict[str, tuple[Any, ...]] = {}
    fixed: dict[str, str] = {}
    for knob in sorted(reference.knobs - candidate.knobs):
        values = [v for v in reference.values(knob) if v != AUTO]
        if not values:
            continue
        const = candidate.constants.get(knob)
        if len(values) > 1:
            absent[knob] = tuple(values)
        elif const is not None:
            fixed[knob] = f"reference {values[0]}, candidate constant {const}" + (
                "" if const == values[0] else " (differs)"
            )
            if const != values[0]:
                absent[knob] = tuple(values)
        else:
            fixed[knob] = f"reference always {values[0]}; not a knob of the candidate's configs"
    best_cfg, best_src = best if best else (None, None)
    present: bool | None = None
    if best_cfg is not None:
        on = [k for k, _ in best_cfg.knobs if k in candidate.knobs]
        present = any(c.matches(best_cfg, on) for c in candidate.configs) and not any(
            k in absent for k, _ in best_cfg.knobs
        )
    return SpaceComparison(
        variant, candidate, reference, shared, missing, absent, fixed, best_cfg, best_src, present
    )


def audit_search_space(
    *,
    candidate_wrapper: Path | None,
    reference_wrapper: Path | None,
    analysis: Any,
    capability: tuple[int, int],
    capability_source: str,
    kernel: str = "",
) -> SearchSpaceAudit:
    """Pair and compare spaces per variant (see the module docstring)."""
    audit = SearchSpaceAudit(capability, capability_source)
    cand: list[ConfigSpace] = []
    ref_wrapper: list[ConfigSpace] = []
    if candidate_wrapper is not None:
        cand, notes = wrapper_spaces(candidate_wrapper, capability)
        audit.notes += notes
    else:
        audit.notes.append(
            "cutile-rs wrapper source unavailable (no TileGym checkout): the candidate's search "
            "space cannot be read"
        )
    if reference_wrapper is not None and reference_wrapper.is_file():
        ref_wrapper, notes = reference_wrapper_spaces(reference_wrapper, capability)
        audit.notes += notes
    from_analysis = analysis_spaces(analysis)
    audit.candidate_spaces, audit.reference_spaces = cand, from_analysis + ref_wrapper
    variants = [v.variant_name for v in getattr(analysis, "kernel_variants", ()) or ()] if analysis else []
    kernel_fn = (
        {
            v.variant_name: v.kernel_function
            for v in getattr(analysis, "kernel_variants", ()) or ()
            if v.kernel_function
        }
        if analysis
        else {}
    )
    bests = best_configs(analysis)
    ktoks = _tokens(kernel)

    def ref_for(variant: str | None) -> ConfigSpace | None:
        for s in from_analysis:
            if s.variant == variant and variant is not None:
                return s
        if variant is not None and variant in kernel_fn:
            stem = _kernel_stem(kernel_fn[variant])
            for s in ref_wrapper:
                if s.kernel and _kernel_stem(s.kernel) == stem:
                    return s
            by_name = [
                s for s in ref_wrapper if s.function and match_variant(s.function, variants, ktoks) == variant
            ]
            if len(by_name) == 1:
                return by_name[0]
        top = [s for s in from_analysis if s.variant is None]
        if top and (variant is None or len(variants) <= 1):
            return top[0]
        if len(ref_wrapper) == 1 and len(variants) <= 1:
            return ref_wrapper[0]
        return None

    if not cand:
        return audit
    if len(variants) == 1 or (not variants and len(cand) == 1):
        pairs = [(variants[0] if variants else None, s) for s in cand[:1]]
        if len(cand) > 1:
            audit.notes.append(
                f"{len(cand)} candidate config functions for a single-variant kernel: "
                f"compared {cand[0].function}() only"
            )
    elif not variants:
        # no analysis variants: pair candidate and reference config functions by name instead
        for s, r in _pair_by_name(cand, ref_wrapper, ktoks):
            if r is None:
                audit.notes.append(f"{s.origin}: no reference config function to compare with")
            else:
                audit.comparisons.append(compare_spaces(s, r, None, bests.get(None)))
        return audit
    else:
        pairs = []
        for s in cand:
            v = match_variant(s.function or "", variants, ktoks)
            if v is None:
                audit.notes.append(f"{s.origin}: cannot tell which variant of {variants} it tunes")
            else:
                pairs.append((v, s))
    for variant, space in pairs:
        ref = ref_for(variant)
        if ref is None:
            if any(k in KNOB_ALIASES for k in space.knobs) and (from_analysis or ref_wrapper):
                audit.notes.append(
                    f"variant {variant or '(single)'}: the reference lists no autotune configs for it "
                    "(not autotuned there): nothing to compare"
                )
            continue
        best = bests.get(variant) or bests.get(None) if variant is not None else bests.get(None)
        cand_space = ConfigSpace(
            space.origin,
            space.configs,
            variant,
            space.function,
            space.kernel,
            space.constants,
            space.spelling,
        )
        audit.comparisons.append(compare_spaces(cand_space, ref, variant, best))
    return audit
