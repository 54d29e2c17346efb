"""What a workspace's evidence says about WHO ran (candidate identity) and WHAT the reference ran (its config).

Contract: :func:`kernel_trust` reads, for one workspace and its E table, the per-launch captures
(``workbench/launches.json.gz``; a malformed file leaves every row ``unknown`` with the reader's message
naming file and key — E's table does not depend on it), the cutile-rs wrapper
(static delegation audit) and the reference wrapper (``@ct.kernel`` signatures, its configs function
for the session's GPU and its grid function), the tests' parametrize names, the run's ``autotune``
events, analysis.json (variant constants, autotune configs) and, only when a capture
carries no reference symbol, ``workbench/ir/index.json``'s recorded entry symbol. It returns
:class:`KernelTrust`: :mod:`.candidate_identity` per row and :mod:`.reference_config` per matched row,
pinned knob by knob where several configs fit (:mod:`.pinning`: the captured grid and cluster dims,
the reference autotuner's winner) — the one reference config every face states, F included.
An absent input leaves the affected rows ``unknown`` with the reason; nothing is guessed.

Cost (issue 31): the whole-kernel inputs are read once into a :class:`TrustContext`
(:func:`trust_context`); each config's trust (:func:`config_trust`: its identity and the reference's
config) is derived from that config's own launch sets' facts (:func:`_derive_config`): read from the
store's columns where it has them (nothing decoded: a fresh session's first command), else from one
decode of its sets. With
``row_cache`` each config's result is kept in the user cache (:mod:`cutile_workbench.artifacts.derive_cache`)
under a key of that config's own inputs — its capture members' bytes, its row's status and baseline,
its IR entry symbol, the reference autotuner's winner for it — and the context's digest (the shared inputs and the deriving code), so a re-run
of one config recomputes that config alone; :func:`kernel_config_trust` answers one config from its
entry alone. :func:`cached_kernel_trust` (what every face reaches,
through ``services.stage_e.trust`` and ``stages.e.report.workspace_trust``) keeps the assembled
:class:`KernelTrust` once per content of all its inputs on top.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cutile_workbench.errors import InputError
from cutile_workbench.evidence.candidate_identity import (
    CandidateIdentity,
    SetLike,
    SideLaunch,
    _n_calls,
    identify,
    sets_for,
    side_launch,
    summary_line,
    wrapper_delegations,
)
from cutile_workbench.evidence.launches import SetFacts, same_backend, set_facts
from cutile_workbench.evidence.pinning import PinContext, pin_config, pin_context
from cutile_workbench.evidence.reference_config import (
    ReferenceConfig,
    decode_cutile_symbol,
    names_for,
    reference_config,
)
from cutile_workbench.evidence.search_space import ConfigSpace, analysis_spaces, reference_wrapper_spaces
from cutile_workbench.model import LaunchSet, RatioRow, RatioTable

if TYPE_CHECKING:
    from cutile_workbench.artifacts.workspace import Workspace


@dataclass(frozen=True)
class KernelTrust:
    """Identity per row and the reference's config per matched row (see the module docstring)."""

    candidate_framework: str
    identities: Mapping[str, CandidateIdentity] = field(default_factory=dict)
    reference_configs: Mapping[str, ReferenceConfig] = field(default_factory=dict)
    wrapper_calls: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        return summary_line(self.identities, self.candidate_framework)

    @property
    def warning(self) -> bool:
        return any(i.not_candidate for i in self.identities.values())

    def mark(self, params: str) -> str:
        ident = self.identities.get(params)
        return ident.mark if ident is not None else "?"

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "warning": self.warning,
            "wrapper_calls": list(self.wrapper_calls),
            "rows": {p: i.as_dict() for p, i in self.identities.items()},
            "reference_configs": {
                p: {
                    "text": r.text,
                    "constants": dict(r.constants),
                    "fits": [c.label for c in r.fits],
                    "decided": r.decided,
                    "unknown": list(r.unknown),
                }
                for p, r in self.reference_configs.items()
            },
        }


def _space_for_function(function: str | None, spaces: list[ConfigSpace], analysis: Any) -> ConfigSpace | None:
    """The reference configs of the kernel ``function``: the wrapper's configs function that tunes it (the
    session's GPU resolved), else analysis.json's list of the variant whose kernel_function it is."""
    if function is None:
        return None
    stem = function.lstrip("_").lower()
    for s in spaces:
        if s.kernel and s.kernel.lstrip("_").lower() == stem:
            return s
    for s in analysis_spaces(analysis):
        if s.kernel and s.kernel.lstrip("_").lower() == stem:
            return s
    top = [s for s in analysis_spaces(analysis) if s.variant is None]
    if len(top) == 1 and len(getattr(analysis, "kernel_variants", ()) or ()) <= 1:
        return top[0]
    return spaces[0] if len(spaces) == 1 else None


def _space_for_symbol(symbol: str | None, spaces: list[ConfigSpace], analysis: Any) -> ConfigSpace | None:
    decoded = decode_cutile_symbol(symbol) if symbol else None
    if decoded:
        return _space_for_function(decoded.function, spaces, analysis)
    return spaces[0] if len(spaces) == 1 else None


def _reference_for_row(
    row: RatioRow,
    same: Sequence[SetLike],
    *,
    spaces: list[ConfigSpace],
    analysis: Any,
    reference_wrapper: Path | None,
    ir_entry: str | None,
    names_memo: dict[str, tuple[list[str] | None, str]] | None = None,
    side_of: Callable[[Any], SideLaunch | None] | None = None,
    space_memo: dict[str, ConfigSpace | None] | None = None,
) -> ReferenceConfig:
    """One matched row's reference config from that config's sets ``same`` (see the module docstring)."""
    base_set = next((s for s in same if _n_calls(s) and same_backend(s.backend, row.baseline_backend)), None)
    side = (side_of or side_launch)(base_set) if base_set is not None else None
    symbol = side.symbol if side is not None else None
    grid = block = regs = smem = None
    if side is not None:
        grid, block, regs, smem = side.grid, side.block, side.registers, side.smem
    if not symbol and ir_entry:
        symbol = ir_entry  # the compile the IR filing matched to CUPTI's kernel
    memo_key = symbol or ""
    if names_memo is not None and memo_key in names_memo:
        names, src = names_memo[memo_key]
    else:
        names, src = names_for(symbol, analysis=analysis, reference_wrapper=reference_wrapper)
        if names_memo is not None:
            names_memo[memo_key] = (names, src)
    # one lookup a symbol (the analysis' spaces are rebuilt on every call: ~0.3 ms a row)
    if space_memo is not None and memo_key in space_memo:
        space = space_memo[memo_key]
    else:
        space = _space_for_symbol(symbol, spaces, analysis)
        if space_memo is not None:
            space_memo[memo_key] = space
    return reference_config(
        row.params,
        row.baseline_backend,
        symbol,
        space=space,
        constant_names=names,
        names_source=src,
        grid=grid,
        block=block,
        registers=regs,
        smem=smem,
    )


def _reference_spaces(
    reference_wrapper: Path | None, capability: tuple[int, int]
) -> tuple[list[ConfigSpace], list[str]]:
    notes: list[str] = []
    spaces: list[ConfigSpace] = []
    if reference_wrapper is not None and reference_wrapper.is_file():
        try:
            spaces, wnotes = reference_wrapper_spaces(reference_wrapper, capability)
            notes += wnotes
        except InputError as exc:  # the reference's configs stay unknown; the reason is kept
            notes.append(f"reference wrapper unreadable, its configs are not matched: {exc}")
    return spaces, notes


def reference_configs_for(
    rows: list[RatioRow],
    launch_sets: Sequence[LaunchSet],
    *,
    analysis: Any,
    reference_wrapper: Path | None,
    capability: tuple[int, int],
    ir_entries: Mapping[str, str] | None = None,
) -> tuple[dict[str, ReferenceConfig], list[str]]:
    """``{params: ReferenceConfig}`` for the matched rows, and notes on what could not be read."""
    spaces, notes = _reference_spaces(reference_wrapper, capability)
    out: dict[str, ReferenceConfig] = {}
    names_memo: dict[str, tuple[list[str] | None, str]] = {}
    for row in rows:
        if row.status != "OK":
            continue
        out[row.params] = _reference_for_row(
            row,
            sets_for(launch_sets, row.params),
            spaces=spaces,
            analysis=analysis,
            reference_wrapper=reference_wrapper,
            ir_entry=(ir_entries or {}).get(row.params),
            names_memo=names_memo,
        )
    return out, notes


def _ir_entries(kernel_dir: Path) -> dict[str, str]:
    from cutile_workbench.ir.filing import read_index

    out: dict[str, str] = {}
    for params, sides in read_index(kernel_dir)["configs"].items():
        ref = sides.get("reference") if isinstance(sides, dict) else None
        if isinstance(ref, dict) and isinstance(ref.get("entry"), str):
            out[str(params)] = ref["entry"]
    return out


# --------------------------------------------------------------------------- per config (issue 31)


@dataclass(frozen=True)
class ConfigTrust:
    """One config's trust: the candidate's identity and (matched rows) the reference's config."""

    identity: CandidateIdentity
    reference: ReferenceConfig | None = None


@dataclass
class TrustContext:
    """The whole-kernel inputs every config's trust reads, read once (see the module docstring)."""

    root: str  # the kernel dir: the per-config file's owner
    candidate_framework: str
    launch_sets: Sequence[LaunchSet]
    any_capture: bool
    unreadable: str
    evidence: str
    wrapper_calls: tuple[str, ...]
    analysis: Any
    reference_wrapper: Path | None
    spaces: list[ConfigSpace]
    ir_entries: Mapping[str, str]
    notes: tuple[str, ...]
    digest: str  # the shared inputs and the deriving code: part of every per-config key
    pins: PinContext = field(default_factory=PinContext)
    names_memo: dict[str, tuple[list[str] | None, str]] = field(default_factory=dict)
    space_memo: dict[str, ConfigSpace | None] = field(default_factory=dict)
    _member_digests: dict[str, str] | None = None
    _rows: Any = None  # the per-config file (ConfigCache), opened once for every config

    def row_cache(self) -> Any:
        """The kernel's per-config trust file (opened once per context, not once per config)."""
        if self._rows is None:
            from cutile_workbench.artifacts.config_cache import ConfigCache

            self._rows = ConfigCache.open("trust-config", self.root)
        return self._rows

    def member_digest(self, params: str) -> str | None:
        """A digest of ``params``'s capture members as stored (no decoding); None: not a store."""
        from cutile_workbench.artifacts.launch_store import LaunchStore

        if not isinstance(self.launch_sets, LaunchStore):
            return None if self.launch_sets else ""
        if self._member_digests is None:
            self._member_digests = self.launch_sets.member_digests()
        return self._member_digests.get(params, "")


#: the modules whose code decides a config's trust: a changed rule is a miss, never a stale hit
_DERIVING = (
    "cutile_workbench.evidence.trust",
    "cutile_workbench.evidence.candidate_identity",
    "cutile_workbench.evidence.reference_config",
    "cutile_workbench.evidence.search_space",
    "cutile_workbench.evidence.launches",
    "cutile_workbench.evidence.pinning",
    "cutile_workbench.evidence.autotune",
    "cutile_workbench.artifacts.launches_io",
    "cutile_workbench.artifacts.launch_store",  # the columns trust reads its facts from
    "cutile_workbench.model",
)
_CODE: list[str] = []
#: bump when ConfigTrust's shape changes (old per-config entries become misses)
ROW_CACHE_VERSION = 2


def _code_digest() -> str:
    if not _CODE:
        from cutile_workbench.artifacts.derive_cache import module_source

        h = hashlib.sha256()
        for name in _DERIVING:
            h.update(name.encode() + b"\0" + module_source(name))
        _CODE.append(h.hexdigest())
    return _CODE[0]


def _file_digest(ws: Workspace, path: Path | None) -> str:
    """The digest of an input's bytes, the workspace's (each input read once per command)."""
    return ws.digest(path) if path is not None else "none"


def trust_context(
    ws: Workspace,
    *,
    candidate_framework: str,
    launch_sets: Sequence[LaunchSet] | None = None,
    func_keys: Sequence[str] = (),
) -> TrustContext:
    """Read the whole-kernel inputs of trust once (``launch_sets`` given: the captures are not re-opened;
    ``func_keys``: the tests whose parametrize names pinning reads)."""
    from cutile_workbench.artifacts.launch_store import open_store
    from cutile_workbench.evidence.gpu import gpu_facts

    paths = ws.paths
    notes: list[str] = []
    unreadable = ""
    if launch_sets is None:
        try:
            # the per-config store (issue 26), confined to the kernel dir (issue 25)
            launch_sets = (
                open_store(paths.launches_json, kernel_dir=paths.root)
                if paths.launches_json.is_file()
                else []
            )
        except InputError as exc:  # E's table still stands; every row says why its identity is unknown
            unreadable, launch_sets = f"the per-launch capture file is malformed: {exc}", []
    evidence = "workbench/launches.json.gz" if paths.launches_json.is_file() else ""
    wrapper = ws.wrapper_source() if hasattr(ws, "wrapper_source") else None
    calls = tuple(wrapper_delegations(wrapper)) if wrapper is not None else ()
    if wrapper is None:
        notes.append("cutile-rs wrapper source not read (no TileGym checkout): no static delegation audit")
    if unreadable:
        notes.append(unreadable)
    tilegym = getattr(ws, "tilegym", None)
    ref_wrapper = (
        Path(tilegym) / "src" / "tilegym" / "ops" / "cutile" / f"{ws.kernel}.py" if tilegym else None
    )
    gpu = gpu_facts(ws.session_meta())
    try:
        ir_entries = _ir_entries(paths.root)
    except InputError as exc:
        ir_entries = {}
        notes.append(f"IR index unreadable, its entry symbols are not used: {exc}")
    spaces, rnotes = _reference_spaces(ref_wrapper, gpu.capability)
    pins = pin_context(
        kernel=ws.kernel,
        tilegym=Path(tilegym) if tilegym else None,
        func_keys=func_keys,
        gpu_name=gpu.name,
        events_path=paths.events_jsonl,
    )
    rnotes += list(pins.notes)
    analysis = ws.analysis
    h = hashlib.sha256(f"trust-config v{ROW_CACHE_VERSION} code {_code_digest()}\0".encode())
    for part in (
        str(paths.root),
        candidate_framework,
        evidence,
        unreadable,
        repr(calls),
        repr(gpu.capability),
        str(ref_wrapper),
        pins.key_text,
    ):
        h.update(part.encode() + b"\0")
    analysis_path = Path(analysis.path) if analysis is not None and getattr(analysis, "path", None) else None
    for digest in (
        _file_digest(ws, analysis_path)
        if analysis_path is not None and analysis_path.is_file()
        else hashlib.sha256(repr(analysis).encode()).hexdigest(),
        _file_digest(ws, ref_wrapper),
    ):
        h.update(f"{digest}\0".encode())
    return TrustContext(
        root=str(paths.root),
        candidate_framework=candidate_framework,
        launch_sets=launch_sets,
        any_capture=bool(launch_sets),
        unreadable=unreadable,
        evidence=evidence,
        wrapper_calls=calls,
        analysis=analysis,
        reference_wrapper=ref_wrapper,
        spaces=spaces,
        ir_entries=ir_entries,
        notes=tuple(notes + rnotes),
        digest=h.hexdigest(),
        pins=pins,
    )


def _derive_config(row: RatioRow, ref_row: RatioRow | None, ctx: TrustContext) -> ConfigTrust:
    """One config's trust from its own sets' facts (identity and the reference's config share them):
    from the store's columns where it has them (nothing decoded, issue 31), else one decode."""
    same = _config_facts(ctx, row.params)
    if ctx.unreadable:
        ident = CandidateIdentity(
            row.params,
            "unknown",
            ctx.unreadable,
            unknown=(f"identity: {ctx.unreadable}",),
            wrapper_calls=ctx.wrapper_calls,
            evidence=ctx.evidence,
        )
    else:
        ident = identify(
            row,
            same,
            ctx.candidate_framework.replace("-", "_"),
            ctx.candidate_framework,
            wrapper_calls=ctx.wrapper_calls,
            evidence=ctx.evidence,
            any_capture=ctx.any_capture,
        )
    ref = None
    if ref_row is not None:
        ref = _reference_for_row(
            ref_row,
            same,
            spaces=ctx.spaces,
            analysis=ctx.analysis,
            reference_wrapper=ctx.reference_wrapper,
            ir_entry=ctx.ir_entries.get(ref_row.params),
            names_memo=ctx.names_memo,
            space_memo=ctx.space_memo,
        )
        if len(ref.fits) > 1:  # several configs fit: the captured launch and the tuner's record narrow them
            base = next(
                (f.summary for f in same if f.n_calls and same_backend(f.backend, ref_row.baseline_backend)),
                None,
            )
            ref = pin_config(
                ref,
                func_key=ref_row.func_key,
                grid=base.grid if base is not None else None,
                cluster=base.cluster if base is not None else None,
                ctx=ctx.pins,
            )
    return ConfigTrust(ident, ref)


def _config_facts(ctx: TrustContext, params: str) -> list[SetFacts]:
    """One config's :class:`SetFacts`: a per-config store's (:func:`config_facts`: its columns, F's launch
    summaries kept from them), else from the given sets."""
    from cutile_workbench.artifacts.launch_store import LaunchStore
    from cutile_workbench.evidence.launches import config_facts

    if isinstance(ctx.launch_sets, LaunchStore):
        return config_facts(ctx.launch_sets, params)
    return [set_facts(s) for s in sets_for(ctx.launch_sets, params)]


def _row_cache(ctx: TrustContext) -> Any:
    return ctx.row_cache()


def config_trust(
    row: RatioRow,
    ctx: TrustContext,
    *,
    ref_row: RatioRow | None = None,
    cache: bool = True,
    flush: bool = True,
) -> ConfigTrust:
    """One config's trust (``ref_row``: the matched row whose reference config is wanted; default: ``row``
    when it is ``OK``); with ``cache``, kept per content of that config's own inputs (module docstring;
    ``flush=False``: the caller writes the kernel's per-config file once, after its last config)."""
    return _keyed_config_trust(row, ctx, ref_row=ref_row, cache=cache, flush=flush)[0]


def _config_key(row: RatioRow, ref_row: RatioRow | None, ctx: TrustContext) -> str | None:
    """The per-config entry's key (module docstring); None: the captures are no store (not cached)."""
    members = ctx.member_digest(row.params)
    if members is None:
        return None
    return hashlib.sha256(
        "\0".join(
            (
                ctx.digest,
                row.params,
                str(row.baseline_backend),
                "" if ref_row is None else f"{ref_row.status}|{ref_row.baseline_backend}|{ref_row.func_key}",
                ctx.ir_entries.get(row.params, ""),
                ctx.pins.winners.get(row.params, ""),
                members,
            )
        ).encode()
    ).hexdigest()


def _keyed_config_trust(
    row: RatioRow, ctx: TrustContext, *, ref_row: RatioRow | None, cache: bool, flush: bool
) -> tuple[ConfigTrust, str | None]:
    """:func:`config_trust` and the key of its per-config entry (None: not cached)."""
    if ref_row is None and row.status == "OK":
        ref_row = row
    key = _config_key(row, ref_row, ctx) if cache else None
    if key is None:
        return _derive_config(row, ref_row, ctx), None
    store = _row_cache(ctx)
    hit = store.get(row.params, key)
    if isinstance(hit, ConfigTrust):
        return hit, key
    got = _derive_config(row, ref_row, ctx)
    store.put(row.params, key, got)
    if flush:
        _flush(ctx)
    return got, key


def _flush(ctx: TrustContext) -> None:
    from cutile_workbench.artifacts.launch_store import LaunchStore
    from cutile_workbench.evidence.launches import summaries_cache

    _row_cache(ctx).flush()
    if isinstance(ctx.launch_sets, LaunchStore):
        summaries_cache(ctx.launch_sets).flush()


def kernel_trust(
    ws: Workspace,
    table: RatioTable,
    *,
    candidate_framework: str,
    launch_sets: Sequence[LaunchSet] | None = None,
    row_cache: bool = False,
    entry_keys: dict[str, str] | None = None,
) -> KernelTrust:
    """See the module docstring (``launch_sets`` given: the captures are not re-read; ``row_cache``:
    each config's trust kept per content of its own inputs; ``entry_keys``: filled with each config's
    per-config entry key, left empty when some config is not kept per config)."""
    ctx = trust_context(
        ws,
        candidate_framework=candidate_framework,
        launch_sets=launch_sets,
        func_keys=sorted({r.func_key for r in table.matched}),
    )
    first: dict[str, RatioRow] = {}
    matched: dict[str, RatioRow] = {}
    for r in table.rows:
        first.setdefault(r.params, r)
        if r.status == "OK":
            matched[r.params] = r  # the last matched row of a config (as reference_configs_for)
    identities: dict[str, CandidateIdentity] = {}
    refs: dict[str, ReferenceConfig] = {}
    keys: dict[str, str] | None = {} if row_cache else None
    for params, row in first.items():
        got, key = _keyed_config_trust(row, ctx, ref_row=matched.get(params), cache=row_cache, flush=False)
        if key is None:
            keys = None
        elif keys is not None:
            keys[params] = key
        identities[params] = got.identity
        if got.reference is not None:
            refs[params] = got.reference
    if row_cache:
        _flush(ctx)  # one write of the kernel's per-config file (only when an entry changed)
    refs = {p: refs[p] for p in matched if p in refs}  # in the table's order of matched rows
    if entry_keys is not None and keys is not None:
        entry_keys.update(keys)
    return KernelTrust(candidate_framework, identities, refs, ctx.wrapper_calls, ctx.notes)


def kernel_config_trust(
    ws: Workspace,
    table: RatioTable,
    params: str,
    *,
    candidate_framework: str,
    launch_sets: Sequence[LaunchSet] | None = None,
) -> ConfigTrust | None:
    """One config's entry of :func:`kernel_trust` (the same rows, context and per-config cache), derived
    or read alone: a one-config question (``timeline --config``) neither reads every config's entry nor
    assembles and stores the kernel-wide trust. None when ``params`` is no row of ``table``."""
    rows = [r for r in table.rows if r.params == params]
    if not rows:
        return None
    matched = [r for r in rows if r.status == "OK"]
    ctx = trust_context(
        ws,
        candidate_framework=candidate_framework,
        launch_sets=launch_sets,
        func_keys=sorted({r.func_key for r in table.matched}),
    )
    return config_trust(rows[0], ctx, ref_row=matched[-1] if matched else None, cache=True)


#: the modules whose code decides the assembled trust (the per-config rules are in the row keys too)
_KERNEL_MODULES = [*_DERIVING, "cutile_workbench.stages.e.report"]


def cached_kernel_trust(
    ws: Workspace,
    table: RatioTable,
    *,
    candidate_framework: str,
    launch_sets: Sequence[LaunchSet] | None = None,
) -> KernelTrust:
    """:func:`kernel_trust`, computed once per content of its inputs (issue 26) and, on a miss, from the
    per-config entries (issue 31: a re-run of one config recomputes that config alone)."""
    from cutile_workbench.artifacts.derive_cache import cached_derivation

    paths = ws.paths
    tilegym = getattr(ws, "tilegym", None)
    ref = Path(tilegym) / "src" / "tilegym" / "ops" / "cutile" / f"{ws.kernel}.py" if tilegym else None
    wrapper = ws.wrapper_source() if hasattr(ws, "wrapper_source") else None
    tests = sorted({Path(tilegym) / r.func_key.partition("::")[0] for r in table.matched}) if tilegym else []
    inputs = [
        p
        for p in (
            paths.launches_json,
            paths.analysis_json,
            paths.session_json,
            paths.workbench_dir / "ir" / "index.json",
            paths.events_jsonl,  # the reference autotuner's winners (pinning)
            wrapper,
            ref,
            *tests,  # their parametrize names (pinning's grid formula)
        )
        if p is not None
    ]
    rows = "\n".join(
        f"{r.func_key}|{r.params}|{r.status}|{r.baseline_backend}|{r.variant}" for r in table.rows
    )
    extra = f"{paths.root}\0{tilegym}\0{candidate_framework}\0{rows}"
    built: list[KernelTrust] = []

    def compute() -> KernelTrust | TrustIndex:
        keys: dict[str, str] = {}
        trust = kernel_trust(
            ws,
            table,
            candidate_framework=candidate_framework,
            launch_sets=launch_sets,
            row_cache=True,
            entry_keys=keys,
        )
        built.append(trust)
        if len(keys) != len(trust.identities):  # not kept per config (captures given as a list): whole
            return trust
        return TrustIndex(
            candidate_framework,
            tuple(keys.items()),
            tuple(trust.reference_configs),
            trust.wrapper_calls,
            trust.notes,
        )

    got = cached_derivation(
        "trust",
        inputs,
        extra,
        _KERNEL_MODULES,
        compute,
        digest=ws.digest,  # the workspace's digests: each input read once for every key
    )
    if built:
        return built[0]
    if isinstance(got, KernelTrust):
        return got
    whole = _from_index(got, str(paths.root))
    if whole is not None:
        return whole
    # an entry the index names is gone (the per-config file pruned, removed or changed): derive again
    # (each config from its entry where it is still there); the index stays true of the same inputs
    return kernel_trust(
        ws, table, candidate_framework=candidate_framework, launch_sets=launch_sets, row_cache=True
    )


@dataclass(frozen=True)
class TrustIndex:
    """The kernel-level trust entry (issue 31): which per-config entries make it, by key, not their
    contents again — a fresh command writes each config's trust once, a re-run of one config one."""

    candidate_framework: str
    rows: tuple[tuple[str, str], ...]  # (params, its per-config entry's key), in the table's row order
    references: tuple[str, ...]  # the configs with a reference config, in the order of matched rows
    wrapper_calls: tuple[str, ...]
    notes: tuple[str, ...]


def _from_index(index: TrustIndex, root: str) -> KernelTrust | None:
    """The :class:`KernelTrust` an index names, from the kernel's per-config file; None when an entry is
    not there under its key."""
    from cutile_workbench.artifacts.config_cache import ConfigCache

    store = ConfigCache.open("trust-config", root)
    identities: dict[str, CandidateIdentity] = {}
    refs: dict[str, ReferenceConfig] = {}
    for params, key in index.rows:
        hit = store.get(params, key)
        if not isinstance(hit, ConfigTrust):
            return None
        identities[params] = hit.identity
        if hit.reference is not None:
            refs[params] = hit.reference
    if set(refs) != set(index.references):
        return None
    refs = {p: refs[p] for p in index.references}
    return KernelTrust(index.candidate_framework, identities, refs, index.wrapper_calls, index.notes)
