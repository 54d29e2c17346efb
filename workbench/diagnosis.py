"""The F procedure (agent_f.md Step 2, contract §5.4): evidence → findings → verdicts.

Contract: :func:`diagnose` is pure (no I/O): it takes :class:`FInputs` (E's ratio table, per-launch
captures, analysis.json, IR audits, wrapper-audit findings, which inputs are missing) and returns
the :class:`~workbench.model.Investigation` list F writes, one report each. Steps, in order:

1. **E table → slow configs.** A matched row is *slow* when ``ratio > 1.05`` (E's gate).
   No matched row at all → one ``all_shapes`` investigation, BLOCKED. No slow row → one
   ``all_shapes`` investigation, ALIGNED (identical data always lands here).
   **Uniform rule**: the gap is uniform when at least :data:`UNIFORM_MIN_SHARE` (75 %) of the
   matched configs are slow *and* the slow ratios lie within a factor :data:`UNIFORM_MAX_SPREAD`
   (2.0) of each other (max/min): a structural issue slows every shape, by varying amounts (the
   recorded softmax gap is 1.26–1.64x on all 7 shapes; agent_f.md asks for one report then). One
   ``all_shapes`` investigation covers every slow row, with the slowest row that has launch data as
   its representative. Otherwise (a gap on some shapes only, or one shape > 2x worse than another)
   the gap is shape-specific: one investigation per slow row (scope = the row's params string).
2. **Launch-count evidence** per backend from :class:`~workbench.model.LaunchSet` s (the most
   common launch signature over the captured calls; medians over those calls): launches/call,
   per-launch time of the main kernel (largest device time), measured sum. More candidate launches
   than the reference → FIXABLE wrapper/host finding naming each extra launch class: ``fill``,
   ``copy``, ``memset``, ``elementwise <op>``, ``canary`` (the main kernel more than once per
   call), ``fallback`` (no candidate kernel: a PyTorch/other-backend kernel ran instead). Confidence
   is high when the main kernel's per-launch time is the same within :data:`SAME_TIME_TOL` (±10 %),
   else medium. Without captures, the E table's ``kernel_times`` launch counts are used (medium).
3. **Same launches, slower kernel → config/resource audit**: analysis.json ``best_config`` present
   in ``autotune_configs``; ``autotune_key`` holds every shape/dtype/transpose field of
   ``test_perf_configs`` (§7.1); registers/thread, shared memory, grid and block of the main kernels.
   A candidate at the register cap (255) or with ≥ 2x the reference's shared memory (and > 100 KB)
   while ≥ 10 % slower per launch is a FIXABLE config finding (a smaller tile / occupancy config
   for that shape is missing from the search space).
4. **IR audit** (diff_ir.sh parity), only once the launch count is sane (agent_f.md: "diff
   perf-relevant IR only after launch count is sane"): a FAIL_FIXABLE audit with a perf-relevant
   critical → FIXABLE finding. diff_ir.sh's "generated scalar assume_div_by" critical is a
   correctness hazard, not a perf cause (real cuTile references carry scalar assumes too, contract
   §10.7): it is reported, never decisive. With extra launches, IR criticals are notes.
Verdict: any fixable finding → FIXABLE; otherwise, when neither launch evidence nor an IR audit
exists for an investigation → BLOCKED (nothing trustworthy); otherwise ALIGNED.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.ir.audit import IRAudit
from workbench.model import Finding, Investigation, LaunchSet, RatioRow, RatioTable
from workbench.testids import id_token

SLOW_RATIO = 1.05
UNIFORM_MIN_SHARE = 0.75
UNIFORM_MAX_SPREAD = 2.0
SAME_TIME_TOL = 0.10
REGISTER_CAP = 255
SMEM_PRESSURE_BYTES = 100 * 1024

Confidence = Literal["high", "medium", "low"]


@dataclass(frozen=True)
class KernelGroup:
    """Launches of one (kind, name) within one call, summarised over the calls used."""

    name: str
    kind: str
    count: int  # per call
    median_us: float  # median per-launch duration
    cls: str  # main | fill | copy | memset | elementwise <op> | kernel


@dataclass(frozen=True)
class LaunchSummary:
    """One backend's launch behaviour for one config (what F's launch table shows)."""

    backend: str
    params: str
    calls_used: int
    calls_total: int
    launches_per_call: int
    main_kernel: str
    main_count: int
    main_per_launch_us: float
    measured_sum_us: float
    groups: tuple[KernelGroup, ...]
    registers_per_thread: int | None = None
    smem_bytes: int | None = None
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    source: str = "cupti"


@dataclass
class FInputs:
    """Everything :func:`diagnose` reads; paths are kernel-dir-relative evidence names."""

    kernel: str
    table: RatioTable | None
    launch_sets: list[LaunchSet] = field(default_factory=list)
    analysis: Any = None  # workbench.analysis.Analysis (duck-typed: autotune_configs, autotune_key, …)
    ir_audits: dict[str | None, IRAudit] = field(default_factory=dict)  # variant → audit
    wrapper_findings: list[Finding] = field(default_factory=list)
    candidate_backend: str = "cutile-rs"
    evidence: dict[str, str] = field(default_factory=dict)  # role → relpath (e_table, launches, …)
    missing: list[str] = field(default_factory=list)  # human lines: "<input>: <why>"


# --------------------------------------------------------------------------- step 2 helpers

_FUNCTOR = re.compile(r"(?:CUDAFunctor_|Functor)(\w+?)(?:[<,>]|$)|(\w+?)Functor")


def _is_native(name: str) -> bool:
    """A PyTorch ATen kernel (demangled ``at::native::…`` or Itanium-mangled ``_ZN2at6native…``)."""
    return "at::native" in name or name.startswith(("_ZN2at6native", "void at::"))


def classify_kernel(name: str, kind: str) -> str:
    """Launch class of a GPU activity (names as CUPTI reports them, mangled or demangled):
    memset | copy | fill | elementwise <op> | native (other ATen kernel) | kernel."""
    low = name.lower()
    if kind == "memset":
        return "memset"
    if kind == "memcpy":
        return "copy"
    if "fillfunctor" in low or "fill_kernel" in low or re.search(r"\bfill\b", low):
        return "fill"
    if "copy" in low:
        return "copy"
    if "elementwise" in low:
        m = re.search(r"CUDAFunctor_([a-z]+)|([A-Z][A-Za-z]*?)Functor", name)
        op = (m.group(1) or m.group(2) or "").lower() if m else ""
        return f"elementwise {op}".strip()
    if _is_native(name):
        return "native"
    return "kernel"


_ITANIUM_ID = re.compile(r"(\d+)")


def _itanium_ids(name: str) -> list[str]:
    """Length-prefixed identifiers of an Itanium-mangled name (``29vectorized_…`` → ``vectorized_…``)."""
    out: list[str] = []
    i = 0
    while i < len(name):
        m = _ITANIUM_ID.match(name, i)
        if not m:
            i += 1
            continue
        n, j = int(m.group(1)), m.end()
        ident = name[j:j + n]
        if n > 0 and len(ident) == n and re.fullmatch(r"[A-Za-z_]\w*", ident):
            out.append(ident)
            i = j + n
        else:
            i = j
    return out


def short_kernel_name(name: str) -> str:
    """Readable short form: ``vectorized_elementwise_kernel<FillFunctor>`` for long C++ names."""
    if name.startswith("_Z"):
        from workbench.capture.demangle import demangle  # c++filt when present; else a light parse

        dem = demangle(name)
        if dem:
            name = dem
        else:
            ids = [x for x in _itanium_ids(name) if x not in ("at", "native", "c10", "std")]
            fun = next((x for x in ids if "Functor" in x), None)
            stem = ids[0] if ids else name[:40]
            return f"{stem}<{fun}>" if fun else stem
    head = name.split("(", 1)[0]
    base = re.search(r"([A-Za-z_]\w*)\s*(?:<|$)", head.replace("void ", "", 1))
    stem = base.group(1) if base else head[:40]
    if "::" in head and base is not None:
        stem = re.split(r"::", head.split("<", 1)[0])[-1].strip()
    functor = re.search(r"(\w*Functor\w*)", head)
    if functor:
        return f"{stem}<{functor.group(1)}>"
    return stem if len(name) > 60 else name


def summarize_launch_set(ls: LaunchSet) -> LaunchSummary | None:
    """Summary over the calls with the most common launch signature (None without kernel launches)."""
    if not ls.calls:
        return None
    sigs = [tuple((x.kind, x.name) for x in c.launches) for c in ls.calls]
    common, _ = Counter(sigs).most_common(1)[0]
    calls = [c for c, s in zip(ls.calls, sigs, strict=True) if s == common]
    if not any(k == "kernel" for k, _ in common):
        return None
    per: dict[tuple[Any, str], list[int]] = {}
    for c in calls:
        for x in c.launches:
            per.setdefault((x.kind, x.name), []).append(x.duration_ns)
    counts: Counter[tuple[Any, str]] = Counter(common)
    # main kernel: the largest non-helper kernel (an elementwise add can outlast the real kernel);
    # only when every kernel is an ATen helper is the largest one "main" (a fallback, see below)
    kernels = [k for k in per if k[0] == "kernel"]
    own = [k for k in kernels if classify_kernel(k[1], "kernel") == "kernel"]
    main_key = max(own or kernels, key=lambda k: sum(per[k]))
    groups = []
    for key, durs in per.items():
        groups.append(KernelGroup(key[1], key[0], counts[key], statistics.median(durs) / 1000.0,
                                  "main" if key == main_key else classify_kernel(key[1], key[0])))
    main = next(x for x in calls[0].launches if (x.kind, x.name) == main_key)
    smem = None
    if main.static_smem is not None or main.dynamic_smem is not None:
        smem = (main.static_smem or 0) + (main.dynamic_smem or 0)
    return LaunchSummary(
        backend=ls.backend, params=ls.params, calls_used=len(calls), calls_total=len(ls.calls),
        launches_per_call=len(common), main_kernel=main.display_name, main_count=counts[main_key],
        main_per_launch_us=statistics.median(per[main_key]) / 1000.0,
        measured_sum_us=statistics.median(c.device_time_ns for c in calls) / 1000.0,
        groups=tuple(sorted(groups, key=lambda g: (g.cls != "main", -g.count * g.median_us))),
        registers_per_thread=main.registers_per_thread, smem_bytes=smem, grid=main.grid, block=main.block,
        source=ls.source)


def _backend_key(name: str) -> str:
    # E names the Triton baseline after its log (``triton_tileir``); its records say ``triton``
    key = id_token(name).lower()
    return key[: -len("_tileir")] if key.endswith("_tileir") else key


def same_backend(a: str | None, b: str | None) -> bool:
    """Same backend across spellings: a ``triton_tileir`` log row ≙ ``triton`` launch records."""
    return a is not None and b is not None and _backend_key(a) == _backend_key(b)


def pick_sets(sets: Sequence[LaunchSet], row: RatioRow, candidate: str) -> tuple[LaunchSet | None, LaunchSet | None]:
    """(candidate set, baseline set) for a row's params; candidate = the non-baseline backend."""
    same = [s for s in sets if s.params == row.params and s.calls]
    base = next((s for s in same if same_backend(s.backend, row.baseline_backend)), None)
    cand = next((s for s in same if same_backend(s.backend, candidate)), None)
    if cand is None:
        others = [s for s in same if not same_backend(s.backend, row.baseline_backend)]
        cand = others[0] if len(others) == 1 else None
    return cand, base


def extra_launches(cand: LaunchSummary, base: LaunchSummary) -> list[str]:
    """Named extra launch classes of the candidate relative to the reference (e.g. 'fill x1')."""
    def classes(s: LaunchSummary) -> Counter[str]:
        c: Counter[str] = Counter()
        for g in s.groups:
            c[g.cls] += g.count
        return c

    cc, bc = classes(cand), classes(base)
    out: list[str] = []
    if _is_native(cand.main_kernel) and not _is_native(base.main_kernel):
        out.append(f"fallback (main kernel is `{short_kernel_name(cand.main_kernel)}`, not a {cand.backend} kernel)")
    if cc["main"] > max(bc["main"], 1):
        out.append(f"canary (main kernel `{short_kernel_name(cand.main_kernel)}` x{cc['main']} per call)")
    for cls in sorted(k for k in cc if k != "main"):
        n = cc[cls] - bc.get(cls, 0)
        if n > 0:
            names = sorted({g.name for g in cand.groups if g.cls == cls})
            shown = ", ".join(short_kernel_name(x) for x in names[:2]) + (" …" if len(names) > 2 else "")
            out.append(f"{cls} x{n} (`{shown}`)")
    return out


# --------------------------------------------------------------------------- step 3 helpers

_KEY_ALIASES = {"batch": "q", "b": "q", "bs": "q", "n_rows": "m", "rows": "m", "cols": "n",
                "hidden": "n", "torch_dtype": "dtype"}


def _norm_key(k: str) -> str:
    k = k.strip().lower()
    return _KEY_ALIASES.get(k, k)


def config_findings(analysis: Any, evidence_path: str) -> list[Finding]:
    """best_config ∈ autotune_configs, autotune_key completeness (§7.1). [] when nothing to check."""
    if analysis is None:
        return []
    out: list[Finding] = []
    configs: list[Mapping[str, Any]] = list(getattr(analysis, "autotune_configs", ()) or ())
    per_variant: dict[str, list[Mapping[str, Any]]] = {}
    for v in getattr(analysis, "kernel_variants", ()) or ():
        if v.autotune_configs:
            per_variant[v.variant_name] = list(v.autotune_configs)
    best = getattr(analysis, "best_config", None)
    if isinstance(best, Mapping) and best:
        items: list[tuple[str | None, Mapping[str, Any]]]
        if all(isinstance(v, Mapping) for v in best.values()):
            items = [(str(k), v) for k, v in best.items()]
        else:
            items = [(None, best)]
        for variant, cfg in items:
            space = per_variant.get(variant or "", []) + configs
            if not space:
                continue
            if not any(all(c.get(k) == val for k, val in cfg.items()) for c in space):
                out.append(Finding(
                    "config", f"reference best config {dict(cfg)} of variant {variant or '(single)'} is not in "
                    f"the autotune search space ({len(space)} config(s))", True, (evidence_path,), "high",
                    {"variant": variant, "best_config": dict(cfg)}))
    autotune = (getattr(analysis, "launch_path", None) == "autotune" or bool(configs) or bool(per_variant))
    key = [_norm_key(k) for k in getattr(analysis, "autotune_key", ()) or ()]
    if autotune:
        if not key:
            out.append(Finding("config", "autotune is used but analysis.json has no autotune_key: the cache "
                               "key cannot be checked", False, (evidence_path,), "low"))
        else:
            fields: dict[str, None] = {}
            for g in getattr(analysis, "test_perf_configs", ()) or ():
                for s in g.shapes:
                    for k in s.params:
                        if k not in ("id", "name", "group"):
                            fields.setdefault(_norm_key(k), None)
            missing = [f for f in fields if f not in key]
            if missing:
                out.append(Finding(
                    "config", f"autotune_key {list(getattr(analysis, 'autotune_key', ()))} lacks "
                    f"{', '.join(missing)}: configs tuned for one shape/dtype are reused for another",
                    True, (evidence_path,), "medium", {"missing_key_fields": missing}))
    return out


def resource_finding(cand: LaunchSummary, base: LaunchSummary, evidence: str) -> Finding | None:
    """Same launch count, slower kernel: compare regs/smem/grid/block of the main kernels."""
    slower = cand.main_per_launch_us / base.main_per_launch_us if base.main_per_launch_us > 0 else 1.0
    diffs: list[str] = []
    rc, rb = cand.registers_per_thread, base.registers_per_thread
    sc, sb = cand.smem_bytes, base.smem_bytes
    if rc is not None and rb is not None and rc != rb:
        diffs.append(f"registers/thread {rc} vs {rb}")
    if sc is not None and sb is not None and sc != sb:
        diffs.append(f"shared memory {sc / 1024:.0f} KB vs {sb / 1024:.0f} KB")
    if cand.grid and base.grid and cand.grid != base.grid:
        diffs.append(f"grid {cand.grid} vs {base.grid}")
    if cand.block and base.block and cand.block != base.block:
        diffs.append(f"block {cand.block} vs {base.block}")
    if not diffs:
        return None
    pressure = ((rc is not None and rc >= REGISTER_CAP) or
                (sc is not None and sb is not None and sc >= 2 * sb and sc > SMEM_PRESSURE_BYTES))
    fixable = pressure and slower >= 1 + SAME_TIME_TOL
    summary = (f"same launch count, main kernel {slower:.2f}x slower per launch; "
               f"{cand.backend} vs {base.backend}: " + ", ".join(diffs))
    if fixable:
        summary += ("; the candidate config is resource-bound at this shape (register cap / shared-memory "
                    "pressure): a smaller-tile or higher-occupancy config for this shape is missing")
    return Finding("resources", summary, fixable, (evidence,), "medium",
                   {"per_launch_ratio": slower, "pressure": pressure})


# --------------------------------------------------------------------------- the procedure


def classify_pattern(rows: Sequence[RatioRow]) -> tuple[str, list[RatioRow]]:
    """('none'|'uniform'|'shape_specific', slow rows) by the module's uniform rule."""
    matched = [r for r in rows if r.status == "OK" and r.ratio is not None]
    slow = [r for r in matched if r.ratio is not None and r.ratio > SLOW_RATIO]
    if not slow:
        return "none", []
    ratios = [r.ratio for r in slow if r.ratio is not None]
    share = len(slow) / len(matched)
    if share >= UNIFORM_MIN_SHARE and max(ratios) / min(ratios) <= UNIFORM_MAX_SPREAD:
        return "uniform", slow
    return "shape_specific", slow


def _launch_evidence(inputs: FInputs, row: RatioRow) -> tuple[list[Finding], LaunchSummary | None,
                                                             LaunchSummary | None, bool]:
    """Findings of steps 2–3 for one row; returns (findings, cand, base, had_launch_evidence)."""
    ev = inputs.evidence.get("launches", "workbench/launches.json.gz")
    cset, bset = pick_sets(inputs.launch_sets, row, inputs.candidate_backend)
    cand = summarize_launch_set(cset) if cset else None
    base = summarize_launch_set(bset) if bset else None
    findings: list[Finding] = []
    if cand and base:
        if cand.launches_per_call > base.launches_per_call or _is_native(cand.main_kernel):
            same = (base.main_per_launch_us > 0 and
                    abs(cand.main_per_launch_us / base.main_per_launch_us - 1) <= SAME_TIME_TOL)
            extras = extra_launches(cand, base)
            findings.append(Finding(
                "launch_count",
                f"{cand.backend} launches {cand.launches_per_call} GPU activities per call vs "
                f"{base.launches_per_call} for {base.backend}"
                + (" with the same per-launch kernel time" if same else "")
                + f"; extra: {', '.join(extras) or 'unclassified'} — a wrapper/host hot-path issue",
                True, (ev,), "high" if same else "medium",
                {"extra": extras, "same_per_launch": same}))
        elif cand.launches_per_call == base.launches_per_call:
            rf = resource_finding(cand, base, ev)
            if rf is not None:
                findings.append(rf)
            elif base.main_per_launch_us > 0 and cand.main_per_launch_us / base.main_per_launch_us <= 1 + SAME_TIME_TOL:
                findings.append(Finding("launch_count", f"launch counts match ({cand.launches_per_call}/call) and "
                                        "the main kernel's per-launch time is within noise", False, (ev,), "high"))
            else:
                findings.append(Finding("launch_count", f"launch counts match ({cand.launches_per_call}/call); the "
                                        f"{cand.backend} kernel itself is slower with the same resources",
                                        False, (ev,), "medium"))
        return findings, cand, base, True
    # fall back to the E table's kernel_times counts (TileGym's own launches/iter)
    if row.candidate_launches is not None and row.baseline_launches is not None:
        e_ev = inputs.evidence.get("perf_log", "perf_cutile_rs.txt")
        if row.candidate_launches > row.baseline_launches:
            findings.append(Finding(
                "launch_count", f"kernel_times counts {row.candidate_launches} launches/iter for the candidate vs "
                f"{row.baseline_launches} for {row.baseline_backend}: extra launches in the wrapper hot path "
                "(kinds unknown without per-launch captures)", True, (e_ev,), "medium"))
        else:
            findings.append(Finding("launch_count", f"kernel_times launch counts match ({row.candidate_launches}/iter); "
                                    "no per-launch captures for resources", False, (e_ev,), "low"))
        return findings, None, None, True
    return findings, None, None, False


def _ir_findings(inputs: FInputs, row: RatioRow) -> tuple[list[Finding], bool]:
    audit = inputs.ir_audits.get(row.variant) or (
        next(iter(inputs.ir_audits.values())) if len(inputs.ir_audits) == 1 else None)
    if audit is None:
        return [], False
    ev = (audit.ref_name, audit.gen_name)
    crit = [n[len("CRITICAL: "):] for n in audit.notes if n.startswith("CRITICAL: ")]
    perf = [c for c in crit if not c.startswith("generated scalar assume_div_by")]
    if audit.verdict == "FAIL_FIXABLE" and perf:
        return [Finding("ir", f"diff_ir.sh verdict FAIL_FIXABLE: {'; '.join(crit)}", True, ev, "medium",
                        {"verdict": audit.verdict, "critical": perf})], True
    if audit.verdict == "FAIL_FIXABLE":
        return [Finding("ir", f"diff_ir.sh verdict FAIL_FIXABLE only for: {'; '.join(crit)} (a correctness "
                        "hazard, not a perf cause)", False, ev, "medium",
                        {"verdict": audit.verdict, "critical": crit})], True
    text = ("diff_ir.sh verdict PASS" if audit.verdict == "PASS" else
            f"diff_ir.sh verdict PASS_WITH_NOTES ({audit.workaround_count} workaround op(s), "
            f"{audit.note_count} note(s)): no B-addressable IR mismatch")
    return [Finding("ir", text, False, ev, "medium", {"verdict": audit.verdict})], True


_HOT_PATH_RULES = ("canary_hot_path", "kernel_fn_alloc", "second_output", "hot_path_copy")


def _cross_check_wrapper(wrapper: Sequence[Finding], launch: Sequence[Finding]) -> list[Finding]:
    """Static wrapper findings are hypotheses: measured launch counts confirm or clear them.

    A hot-path rule (extra launch/alloc/copy) flagged statically while the captures show the same
    launch count as the reference is kept as a note but no longer decides FIXABLE; confirmed by
    extra measured launches, it gets high confidence."""
    extra = any(f.kind == "launch_count" and f.fixable for f in launch)
    measured_equal = any(f.kind == "launch_count" and not f.fixable for f in launch)
    out: list[Finding] = []
    for f in wrapper:
        rule = str(f.details.get("rule", ""))
        if rule in _HOT_PATH_RULES and measured_equal:
            out.append(Finding(f.kind, f"{f.summary} (not confirmed: measured launch counts match the reference)",
                               False, f.evidence, "low", dict(f.details)))
        elif rule in _HOT_PATH_RULES and extra:
            out.append(Finding(f.kind, f"{f.summary} (confirmed by the extra measured launches)", True,
                               f.evidence, "high", dict(f.details)))
        else:
            out.append(f)
    return out


def _verdict(findings: Sequence[Finding], has_evidence: bool) -> tuple[str, Confidence]:
    fixable = [f for f in findings if f.fixable]
    rank = {"high": 2, "medium": 1, "low": 0}
    if fixable:
        best = max(fixable, key=lambda f: rank[f.confidence])
        return "FIXABLE", best.confidence
    if not has_evidence:
        return "BLOCKED", "low"
    conf: Confidence = "high" if any(f.kind == "launch_count" and f.confidence == "high" for f in findings) else "medium"
    return "ALIGNED", conf


def _missing_findings(inputs: FInputs) -> list[Finding]:
    return [Finding("missing", m, False, (), "low") for m in inputs.missing]


def diagnose(inputs: FInputs) -> list[Investigation]:
    """Run steps 1–4 (see module docstring) and return one Investigation per report."""
    missing = _missing_findings(inputs)
    table = inputs.table
    if table is None or not table.matched:
        why = "no E ratio table" if table is None else "the E table has no matched config (all NA)"
        # IR audits still inform the reader, but cannot decide a verdict without a measured gap
        info = [Finding("ir", f"{a.verdict_line} for {a.ref_name} vs {a.gen_name} (no E data to tie it to a gap)",
                        False, (a.ref_name, a.gen_name), "low") for a in inputs.ir_audits.values()]
        inv = Investigation(inputs.kernel, "all_shapes", "BLOCKED", list(table.rows) if table else [],
                            [Finding("missing", f"{why}: no trustworthy diagnosis is possible", False,
                                     (inputs.evidence.get("e_table", "perf_cutile_rs.txt"),), "high"),
                             *missing, *info], "none")
        inv.details = {"representative": None, "confidence": "high", "launch_summaries": []}
        return [inv]
    pattern, slow = classify_pattern(table.rows)
    cfg = config_findings(inputs.analysis, inputs.evidence.get("analysis", "reference/analysis.json"))
    if pattern == "none":
        gm = f"{table.geomean:.4f}" if table.geomean is not None else "n/a"
        f = Finding("ratio", f"no matched config is slower than {SLOW_RATIO} (geomean_ratio={gm}): nothing to fix",
                    False, (inputs.evidence.get("e_table", "reports/performance.md"),), "high")
        return [Investigation(inputs.kernel, "all_shapes", "ALIGNED", list(table.matched), [f, *missing], "none",
                              {"representative": None, "confidence": "high", "launch_summaries": []})]

    def investigate(scope: str, rows: list[RatioRow], pat: str) -> Investigation:
        with_sets = [r for r in rows if all(pick_sets(inputs.launch_sets, r, inputs.candidate_backend))]
        rep = max(with_sets or rows, key=lambda r: r.ratio or 0.0)
        lf, cand, base, had_launch = _launch_evidence(inputs, rep)
        irf, had_ir = _ir_findings(inputs, rep)
        if any(f.kind == "launch_count" and f.fixable for f in lf):
            # launch count not sane yet: IR differences cannot be ranked as the cause (agent_f.md step 4)
            irf = [Finding(f.kind, f"{f.summary} (secondary: re-audit once the extra launches are gone)",
                           False, f.evidence, "low", dict(f.details)) for f in irf]
        findings = [*lf, *cfg, *_cross_check_wrapper(inputs.wrapper_findings, lf), *irf]
        if not had_launch:
            findings.append(Finding("missing", "no launch evidence (no per-launch capture, no kernel_times counts) "
                                    f"for {rep.params}", False, (), "low"))
        if not had_ir:
            findings.append(Finding("missing", f"no reference/generated IR pair for variant "
                                    f"{rep.variant or '(single)'}", False, (), "low"))
        verdict, conf = _verdict(findings, had_launch or had_ir)
        details: dict[str, Any] = {"representative": rep.params, "confidence": conf,
                                   "launch_summaries": [s for s in (base, cand) if s is not None]}
        return Investigation(inputs.kernel, scope, verdict, rows, [*findings, *missing],  # type: ignore[arg-type]
                             pat, details)  # type: ignore[arg-type]

    if pattern == "uniform":
        return [investigate("all_shapes", slow, "uniform")]
    return [investigate(r.params, [r], "shape_specific") for r in slow]


def all_findings(invs: Iterable[Investigation]) -> list[Finding]:
    seen: dict[tuple[str, str], Finding] = {}
    for inv in invs:
        for f in inv.findings:
            seen.setdefault((f.kind, f.summary), f)
    return list(seen.values())
