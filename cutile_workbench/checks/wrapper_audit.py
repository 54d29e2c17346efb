"""Static audit of a cutile-rs op wrapper (``src/tilegym/ops/cutile_rs/<kernel>.py``) with ``ast``.

Contract: :func:`audit_wrapper` parses the wrapper (never imports it) and returns
``model.Finding(kind="wrapper", evidence=("path:line",), details={rule, rule_text, action,
source, line})`` for each hot-path defect the seed's Agent F / performance checklist names:

- ``autotune_missing``: the reference autotunes but the wrapper never calls ``autotune_launch``;
- ``canary_hot_path``: an FFI launch on every call besides the autotuned one (a fixed-config
  canary before ``autotune_launch``, or two launches inside ``kernel_fn``);
- ``kernel_fn_alloc``: ``torch.zeros/ones/full/*_like``, ``.clone()``, ``.contiguous()``,
  ``.expand().contiguous()``, ``.copy_()``/``.fill_()``/``.zero_()`` inside ``kernel_fn(cfg)``;
- ``second_output``: an output preallocated outside ``kernel_fn`` while ``kernel_fn`` allocates its own;
- ``hot_path_copy``: copies on every call outside ``kernel_fn`` (``.transpose(..).contiguous()``,
  ``.clone()``, ``out.copy_(result)``) — they are timed too, the harness times the whole call;
- ``compile_options``: occupancy / num_cta_in_cga not forwarded to the FFI when the reference
  tunes them (or pinned when the reference leaves them auto);
- ``cache_key``: ``autotune_launch(key=...)`` lacks a field of analysis.json ``autotune_key``. A key
  element that is a local name counts for what its assignments read (``persistent = 1 if
  static_persistent else 0`` covers ``static_persistent``), and a parameter the function refuses
  when set (``if trans_a: raise NotImplementedError``) has one value at the call and needs no key slot;
- ``grad_not_detached``: a tensor input of the registered op is neither detached nor rejected
  (or is rejected, which fails perf tests that create ``requires_grad`` inputs).

Findings are hypotheses from source; launch evidence (CUPTI counts) confirms or clears them.
``fixable`` is True only for high-confidence findings (a defect the source proves, e.g. a canary on
every call); medium/low ones carry ``details["needs_confirmation"] = True``.
Bad input (missing file, syntax error) raises ``InputError`` naming the file and line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cutile_workbench.checks.static_eval import StaticEvaluator, Unresolvable
from cutile_workbench.model import Finding
from cutile_workbench.pystatic.pysource import call_name as _call_name
from cutile_workbench.pystatic.pysource import display_path as _display_path
from cutile_workbench.pystatic.pysource import dotted_name, parse_python_source
from cutile_workbench.pystatic.pysource import enclosing_function as _enclosing_function
from cutile_workbench.pystatic.pysource import walk_no_nested as _walk_no_nested

CHECKLIST = "references/performance-checklist.md"
AGENT_F = "agents/agent_f.md"
AUTOTUNER = "src/tilegym/backend/cutile_rs/autotuner.py"


@dataclass(frozen=True)
class Rule:
    """A rule the seed states, quoted, with the action it prescribes."""

    id: str
    text: str  # verbatim quote from the seed
    source: str
    action: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "autotune_missing",
            "Confirm the cutile-rs wrapper uses `autotune_launch` if any reference backend autotunes.",
            AGENT_F,
            "Route the launch through autotune_launch(kernel_fn=..., configs=<analysis.json autotune_configs>, "
            "key=<autotune_key fields>) so the reference's search space is explored.",
        ),
        Rule(
            "canary_hot_path",
            "**Fixed-config canary stays outside timed/autotune hot paths**: one `_run_ffi` call may be used before "
            "perf timing, but never inside `kernel_fn(cfg)` and never before every cached launch.",
            CHECKLIST,
            "Remove the per-call fixed-config launch; if a canary is needed, run it once per process "
            "(module-level guard) before perf timing, never before every cached launch.",
        ),
        Rule(
            "kernel_fn_alloc",
            "**Autotune lambda is clean**: `kernel_fn(cfg)` allocates outputs with `torch.empty` only. "
            "No clone/zeros/ones/extra contiguous copies inside timing.",
            CHECKLIST,
            "Allocate outputs inside kernel_fn(cfg) with torch.empty/empty_like only; move copies and "
            "fills out of the timed lambda (or make the kernel write every element).",
        ),
        Rule(
            "second_output",
            "preallocating an output, then allocating a second output inside `kernel_fn`",
            AGENT_F,
            "Allocate the output once, inside kernel_fn(cfg), with torch.empty; drop the outer allocation.",
        ),
        Rule(
            "hot_path_copy",
            "NEVER `.clone()`, `torch.zeros`, `torch.ones`, `.expand().contiguous()` —\n"
            "    these launch GPU kernels (DtoD memcpy / fill) that CUPTI counts in the\n"
            "    benchmark and create phantom gaps.",
            AUTOTUNER,
            "Avoid per-call copies around the launch (pass strides to the FFI instead of .contiguous() "
            "after a transpose/expand; return the kernel's output instead of copying into `out`), or "
            "confirm with launch counts that they are no-ops for the benchmarked inputs.",
        ),
        Rule(
            "compile_options",
            "**CompileOptions parity (both directions)**: match analysis.json/best_config exactly. If the reference "
            "autotunes an EXPLICIT `num_ctas` (matmul ships {1,2,4}), the wrapper MUST forward that per-config "
            "value so the CGA cluster size takes effect",
            CHECKLIST,
            "Carry OCCUPANCY / NUM_CTA_IN_CGA in each autotune config and pass them to the FFI "
            "(-1 = auto only where the reference is auto); ffi.rs applies them under `if value > 0`.",
        ),
        Rule(
            "cache_key",
            "Confirm the cache key includes all shape/dtype/variant fields that change the generated work.",
            AGENT_F,
            "Add the missing fields to autotune_launch(key=...) so different shapes/variants/devices never "
            "share a tuned config.",
        ),
        Rule(
            "grad_not_detached",
            "**Autograd contract checked**: forward-only wrappers detach grad-enabled inputs and tests skip backward "
            "surfaces for `cutile-rs`.",
            CHECKLIST,
            "Detach grad-enabled tensor inputs (`if x.requires_grad: x = x.detach()`) before the FFI call "
            "instead of raising.",
        ),
    )
}

_FILL_CALLS = {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "tensor", "randn", "rand"}
_ALLOC_CALLS = _FILL_CALLS | {"empty", "empty_like", "empty_strided"}
_COPY_METHODS = {"clone", "contiguous", "copy_", "fill_", "zero_"}
_LAYOUT_METHODS = {"transpose", "permute", "expand", "t", "mT", "swapaxes", "movedim"}
_TENSOR_HINTS = {
    "dtype",
    "shape",
    "is_cuda",
    "device",
    "contiguous",
    "requires_grad",
    "ndim",
    "stride",
    "view",
}
_KNOBS = {"occupancy": ("occupancy",), "num_ctas": ("num_ctas", "num_cta_in_cga", "num_cta")}


# ---------------------------------------------------------------------------- module model


@dataclass
class _Wrapper:
    path: Path
    display: str
    tree: ast.Module
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)
    launchers: set[str] = field(default_factory=set)  # module functions that reach an FFI call

    def where(self, node: ast.AST) -> str:
        return f"{self.display}:{getattr(node, 'lineno', 0)}"


def _is_ffi_call(call: ast.Call) -> bool:
    """``lib.cutile_<x>(...)``: a call on the cffi library handle (the one real launch)."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr.startswith("cutile_")
        and isinstance(func.value, ast.Name)
    )


def _load(path: Path) -> _Wrapper:
    path = Path(path)
    _source, tree = parse_python_source(path, "cutile-rs wrapper")
    display = _display_path(path)
    w = _Wrapper(path, display, tree)
    ev = StaticEvaluator()
    ev.run_body(tree.body)
    w.constants = {k: v for k, v in ev.names.items() if not isinstance(v, Unresolvable)}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            w.functions[node.name] = node
    # launchers: functions whose body (nested closures included) reaches lib.cutile_*(...)
    direct = {
        name
        for name, fn in w.functions.items()
        if any(isinstance(n, ast.Call) and _is_ffi_call(n) for n in ast.walk(fn))
    }
    w.launchers = set(direct)
    changed = True
    while changed:
        changed = False
        for name, fn in w.functions.items():
            if name in w.launchers:
                continue
            if any(isinstance(n, ast.Call) and _call_name(n) in w.launchers for n in _walk_no_nested(fn)):
                w.launchers.add(name)
                changed = True
    return w


# ---------------------------------------------------------------------------- public API


def audit_wrapper(path: Path, analysis: Any | None = None, *, reference: Path | None = None) -> list[Finding]:
    """Audit one wrapper; ``analysis`` is an ``Analysis`` or the parsed analysis.json (or None).

    ``reference`` is the reference wrapper (default: ``ops/cutile/<name>.py`` beside
    ``ops/cutile_rs/``); it is read only when ``analysis`` does not say whether the reference
    autotunes or which compile options it tunes.
    """
    w = _load(Path(path))
    raw = _raw(analysis)
    ref = _reference_facts(raw, reference if reference is not None else _default_reference(Path(path)))
    findings: list[Finding] = []
    entries = _entry_functions(w)
    autotune_calls = [
        n for n in ast.walk(w.tree) if isinstance(n, ast.Call) and _call_name(n) == "autotune_launch"
    ]
    findings += _check_autotune_used(w, autotune_calls, ref)
    kernel_fns = _kernel_fn_bodies(w, autotune_calls)
    findings += _check_canary(w, entries, autotune_calls, kernel_fns)
    findings += _check_kernel_fn(w, kernel_fns)
    findings += _check_hot_path_copies(w, entries, kernel_fns)
    findings += _check_compile_options(w, ref)
    findings += _check_cache_key(w, autotune_calls, raw)
    findings += _check_grad(w, entries)
    return sorted(findings, key=lambda f: (int(f.details.get("line", 0)), str(f.details.get("rule"))))


def _finding(
    w: _Wrapper, rule_id: str, node: ast.AST, summary: str, *, confidence: str = "high", **extra: Any
) -> Finding:
    # Only high-confidence findings are called fixable on source evidence alone; the others are
    # hypotheses that F's launch counts must confirm before they may drive a FIXABLE verdict.
    fixable = confidence == "high"
    rule = RULES[rule_id]
    line = int(getattr(node, "lineno", 0))
    details: dict[str, Any] = {
        "rule": rule.id,
        "rule_text": rule.text,
        "source": rule.source,
        "action": rule.action,
        "line": line,
        "file": w.display,
        "needs_confirmation": not fixable,
    }
    details.update(extra)
    conf: Any = confidence
    return Finding("wrapper", summary, fixable, (f"{w.display}:{line}",), conf, details)


# ---------------------------------------------------------------------------- analysis / reference


def _raw(analysis: Any | None) -> Mapping[str, Any]:
    if analysis is None:
        return {}
    if isinstance(analysis, Mapping):
        return analysis
    raw = getattr(analysis, "raw", None)
    return raw if isinstance(raw, Mapping) else {}


def _default_reference(path: Path) -> Path | None:
    parent = path.resolve().parent
    if parent.name == "cutile_rs":
        candidate = parent.parent / "cutile" / path.name
        return candidate if candidate.is_file() else None
    return None


@dataclass(frozen=True)
class _RefFacts:
    autotunes: bool | None  # None = unknown
    knobs: dict[str, frozenset[Any]]  # knob → explicit values the reference uses (None = auto)
    source: str  # where the facts came from


def _reference_facts(raw: Mapping[str, Any], reference: Path | None) -> _RefFacts:
    knobs: dict[str, set[Any]] = {}
    configs: list[Any] = []
    if isinstance(raw.get("autotune_configs"), list):
        configs += raw["autotune_configs"]
    for variant in raw.get("kernel_variants") or []:
        if isinstance(variant, Mapping) and isinstance(variant.get("autotune_configs"), list):
            configs += variant["autotune_configs"]
    best = raw.get("best_config")
    if isinstance(best, Mapping):
        configs += [v for v in best.values() if isinstance(v, Mapping)] or [best]
    for cfg in configs:
        if not isinstance(cfg, Mapping):
            continue
        for key, value in cfg.items():
            knob = _knob_of(str(key))
            if knob:
                knobs.setdefault(knob, set()).add(value)
    if raw:
        launch = raw.get("launch_path")
        autotunes = launch == "autotune" or bool(raw.get("autotune_backends")) or bool(configs)
        return _RefFacts(autotunes, {k: frozenset(v) for k, v in knobs.items()}, "analysis.json")
    if reference is None:
        return _RefFacts(None, {}, "unknown")
    try:
        tree = ast.parse(reference.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return _RefFacts(None, {}, "unknown")
    autotunes = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _call_name(node)
            if "autotune" in name or name == "exhaustive_search":
                autotunes = True
            for kw in node.keywords:
                knob = _knob_of(kw.arg or "")
                if knob and isinstance(kw.value, (ast.Constant, ast.Name)):
                    value = kw.value.value if isinstance(kw.value, ast.Constant) else f"<{kw.value.id}>"
                    knobs.setdefault(knob, set()).add(value)
    return _RefFacts(autotunes, {k: frozenset(v) for k, v in knobs.items()}, _display_path(reference))


def _knob_of(name: str) -> str | None:
    lowered = name.lower()
    for knob, spellings in _KNOBS.items():
        if lowered in spellings:
            return knob
    return None


# ---------------------------------------------------------------------------- entry / kernel_fn


def _entry_functions(w: _Wrapper) -> list[ast.FunctionDef]:
    """Functions registered with ``@register_impl`` (plus a function a registered getter returns)."""
    entries: list[ast.FunctionDef] = []
    for fn in w.functions.values():
        if any(isinstance(d, ast.Call) and _call_name(d) == "register_impl" for d in fn.decorator_list):
            entries.append(fn)
            for node in _walk_no_nested(fn):
                if (
                    isinstance(node, ast.Return)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in w.functions
                ):
                    entries.append(w.functions[node.value.id])
    if not entries:  # unregistered wrapper: treat public functions as entries
        entries = [fn for name, fn in w.functions.items() if not name.startswith("_")]
    return entries


def _hot_functions(w: _Wrapper, entries: Iterable[ast.FunctionDef]) -> list[ast.FunctionDef]:
    """Entries plus module functions they call, transitively (the code run on every call)."""
    seen: dict[str, ast.FunctionDef] = {}
    stack = list(entries)
    while stack:
        fn = stack.pop()
        if fn.name in seen:
            continue
        seen[fn.name] = fn
        for node in _walk_no_nested(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in w.functions:
                stack.append(w.functions[node.func.id])
    return list(seen.values())


def _kernel_fn_bodies(w: _Wrapper, autotune_calls: list[ast.Call]) -> list[ast.AST]:
    """The functions passed as ``kernel_fn`` plus the local/module functions they call."""
    bodies: list[ast.AST] = []
    for call in autotune_calls:
        arg = next(
            (k.value for k in call.keywords if k.arg == "kernel_fn"), call.args[0] if call.args else None
        )
        if arg is None:
            continue
        scope = _enclosing_function(w.tree, call)
        local_defs = {n.name: n for n in ast.walk(scope) if isinstance(n, ast.FunctionDef)} if scope else {}
        roots: list[ast.AST] = []
        if isinstance(arg, ast.Lambda):
            roots.append(arg)
        elif isinstance(arg, ast.Name) and arg.id in local_defs:
            roots.append(local_defs[arg.id])
        elif isinstance(arg, ast.Name) and arg.id in w.functions:
            roots.append(w.functions[arg.id])
        seen: set[int] = set()
        while roots:
            node = roots.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            bodies.append(node)
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                    name = sub.func.id
                    if name in local_defs and local_defs[name] is not node:
                        roots.append(local_defs[name])
                    elif name in w.functions and w.functions[name] is not node:
                        roots.append(w.functions[name])  # module helpers run inside the timed lambda too
    return bodies


def _inside(node: ast.AST, containers: Iterable[ast.AST]) -> bool:
    return any(any(sub is node for sub in ast.walk(c)) for c in containers)


# ---------------------------------------------------------------------------- checks


def _check_autotune_used(w: _Wrapper, autotune_calls: list[ast.Call], ref: _RefFacts) -> list[Finding]:
    if autotune_calls or not ref.autotunes:
        return []
    ffi = next(
        (n for n in ast.walk(w.tree) if isinstance(n, ast.Call) and _is_ffi_call(n)),
        w.tree.body[0] if w.tree.body else w.tree,
    )
    return [
        _finding(
            w,
            "autotune_missing",
            ffi,
            f"reference autotunes ({ref.source}) but the wrapper launches a fixed config without autotune_launch",
            reference=ref.source,
        )
    ]


def _check_canary(
    w: _Wrapper, entries: list[ast.FunctionDef], autotune_calls: list[ast.Call], kernel_fns: list[ast.AST]
) -> list[Finding]:
    out: list[Finding] = []
    hot = _hot_functions(w, entries)
    launches_outside: list[ast.Call] = []
    for fn in hot:
        tunes_here = any(
            isinstance(n, ast.Call) and _call_name(n) == "autotune_launch" for n in _walk_no_nested(fn)
        )
        pure_launcher = fn.name in w.launchers and fn not in entries and not tunes_here
        for node in _walk_no_nested(fn):
            if isinstance(node, ast.Call) and (_call_name(node) in w.launchers or _is_ffi_call(node)):
                if pure_launcher and _is_ffi_call(node):
                    continue  # a helper's own FFI call is counted where the helper is called
                if not _inside(node, kernel_fns):
                    launches_outside.append(node)
    if autotune_calls:
        for call in launches_outside:
            guarded = _is_conditional(w.tree, call)
            out.append(
                _finding(
                    w,
                    "canary_hot_path",
                    call,
                    f"`{ast.unparse(call.func)}(...)` launches a fixed config on the call path besides "
                    "autotune_launch"
                    + (" (conditional: check it runs once per process)" if guarded else " on every call"),
                    confidence="medium" if guarded else "high",
                    expected_evidence="the cutile-rs kernel with rep_num=2 (or two rows) per measured call; ~2x uniform",
                )
            )
    elif len(launches_outside) > 1:
        for call in launches_outside[1:]:
            out.append(
                _finding(
                    w,
                    "canary_hot_path",
                    call,
                    f"{len(launches_outside)} FFI launches on one call path; only one launch per call is expected",
                )
            )
    for body in kernel_fns:
        ffi_calls = [
            n
            for n in ast.walk(body)
            if isinstance(n, ast.Call)
            and (_is_ffi_call(n) or (_call_name(n) in w.launchers and isinstance(n.func, ast.Name)))
        ]
        direct = [n for n in ffi_calls if isinstance(n.func, ast.Name) and n.func.id in w.launchers]
        if len(direct) > 1:
            out.append(
                _finding(
                    w,
                    "canary_hot_path",
                    direct[1],
                    f"kernel_fn(cfg) launches {len(direct)} times (a canary inside the timed lambda)",
                )
            )
    return _dedupe(out)


def _is_conditional(tree: ast.Module, node: ast.AST) -> bool:
    for sub in ast.walk(tree):
        if isinstance(sub, (ast.If, ast.Try)) and any(n is node for stmt in sub.body for n in ast.walk(stmt)):
            return True
    return False


def _copy_kind(call: ast.Call) -> str | None:
    """Name the GPU work a call launches: fill / copy, or None for allocation-free calls."""
    func = call.func
    if isinstance(func, ast.Attribute):
        base = dotted_name(func.value) or ""
        if base == "torch" and func.attr in _FILL_CALLS:
            return f"torch.{func.attr}"
        if func.attr in _COPY_METHODS and base != "torch":
            if func.attr == "contiguous":
                inner = func.value
                if isinstance(inner, ast.Call) and _call_name(inner) in _LAYOUT_METHODS:
                    return f".{_call_name(inner)}().contiguous()"
            return f".{func.attr}()"
    return None


def _check_kernel_fn(w: _Wrapper, kernel_fns: list[ast.AST]) -> list[Finding]:
    out: list[Finding] = []
    allocs_inside: list[ast.Call] = []
    for body in kernel_fns:
        for node in ast.walk(body):
            if not isinstance(node, ast.Call):
                continue
            kind = _copy_kind(node)
            if kind:
                out.append(
                    _finding(
                        w,
                        "kernel_fn_alloc",
                        node,
                        f"`{kind}` inside kernel_fn(cfg) launches a fill/copy kernel in every timed call",
                        expected_evidence="an extra FillFunctor/direct_copy_kernel row or a Memset/Memcpy DtoD per call",
                    )
                )
            if (dotted_name(node.func) or "").startswith("torch.") and _call_name(node) in _ALLOC_CALLS:
                allocs_inside.append(node)
    # second output: the function that calls autotune_launch preallocates, and kernel_fn allocates too
    if allocs_inside:
        for body in kernel_fns:
            scope = _enclosing_function(w.tree, body)
            if scope is None:
                continue
            for node in _walk_no_nested(scope):
                if (
                    isinstance(node, ast.Call)
                    and (dotted_name(node.func) or "").startswith("torch.")
                    and _call_name(node) in _ALLOC_CALLS
                    and not _inside(node, kernel_fns)
                    and _allocation_is_output(scope, node, w, kernel_fns)
                ):
                    fill = _call_name(node) in _FILL_CALLS
                    out.append(
                        _finding(
                            w,
                            "second_output",
                            node,
                            f"output preallocated with torch.{_call_name(node)} outside kernel_fn while kernel_fn "
                            "allocates its own"
                            + (" (a fill kernel every call)" if fill else " (unused memory)"),
                            confidence="high" if fill else "low",
                        )
                    )
    return _dedupe(out)


def _allocation_is_output(
    scope: ast.FunctionDef, alloc: ast.Call, w: _Wrapper, kernel_fns: list[ast.AST]
) -> bool:
    """A preallocation that kernel_fn launches into as output, or never uses (a would-be output).

    A tensor kernel_fn passes as a later FFI argument (e.g. attention_sink's ``start_q``) is an
    input, not a second output.
    """
    name = next(
        (
            n.targets[0].id
            for n in ast.walk(scope)
            if isinstance(n, ast.Assign)
            and n.value is alloc
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
        ),
        None,
    )
    if name is None:
        return False
    uses = [
        n
        for body in kernel_fns
        for n in ast.walk(body)
        if isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id == name for a in n.args)
    ]
    if not uses:
        return not any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            for b in kernel_fns
            for n in ast.walk(b)
        )
    return any(isinstance(u.args[0], ast.Name) and u.args[0].id == name for u in uses if u.args)


def _check_hot_path_copies(
    w: _Wrapper, entries: list[ast.FunctionDef], kernel_fns: list[ast.AST]
) -> list[Finding]:
    out: list[Finding] = []
    for fn in _hot_functions(w, entries):
        for node in _walk_no_nested(fn):
            if not isinstance(node, ast.Call) or _inside(node, kernel_fns):
                continue
            kind = _copy_kind(node)
            if kind is None:
                continue
            if kind == ".contiguous()":
                # x.contiguous() on an already-contiguous input returns x and launches nothing
                continue
            if (
                kind == ".copy_()"
                or kind == ".clone()"
                or kind.endswith(").contiguous()")
                or kind.startswith("torch.")
            ):
                out.append(
                    _finding(
                        w,
                        "hot_path_copy",
                        node,
                        f"`{ast.unparse(node)[:80]}` runs on every call outside kernel_fn and launches a copy/fill "
                        "that the CUPTI harness times",
                        confidence="medium",
                        expected_evidence="a direct_copy_kernel / elementwise row or Memcpy DtoD per measured call",
                    )
                )
    return _dedupe(out)


def _ffi_param_names(w: _Wrapper, call: ast.Call) -> list[str]:
    """Parameter names of ``lib.cutile_x`` from the module's C declaration string, if present."""
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    for value in w.constants.values():
        if isinstance(value, str) and name in value:
            m = re.search(rf"\b{re.escape(name)}\s*\(([^)]*)\)", value, re.S)
            if m:
                return [
                    re.findall(r"\w+", p)[-1] if re.findall(r"\w+", p) else "" for p in m.group(1).split(",")
                ]
    return []


def _is_auto_constant(w: _Wrapper, node: ast.expr) -> bool:
    while isinstance(node, ast.Call) and _call_name(node) in ("int",) and node.args:
        node = node.args[0]
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    ):
        return node.operand.value == 1
    if isinstance(node, ast.Constant):
        return node.value in (-1, None, 0)
    if isinstance(node, ast.Name) and node.id in w.constants:
        return w.constants[node.id] in (-1, None, 0)
    if isinstance(node, ast.Call) and node.args and all(_is_auto_constant(w, a) for a in node.args):
        return True  # _compile_option_value(_AUTO) and friends
    return False


def _wrapper_knob_values(w: _Wrapper, knob: str) -> set[Any]:
    values: set[Any] = set()
    for node in ast.walk(w.tree):
        if isinstance(node, ast.Call) and _call_name(node) in ("SimpleNamespace", "dict", "Config"):
            for kw in node.keywords:
                if _knob_of(kw.arg or "") == knob:
                    if isinstance(kw.value, ast.Constant):
                        values.add(kw.value.value)
                    elif isinstance(kw.value, ast.Name):
                        values.add(w.constants.get(kw.value.id, f"<{kw.value.id}>"))
                    else:
                        values.add(f"<{ast.unparse(kw.value)}>")
    return values


def _check_compile_options(w: _Wrapper, ref: _RefFacts) -> list[Finding]:
    out: list[Finding] = []
    ffi_calls = [n for n in ast.walk(w.tree) if isinstance(n, ast.Call) and _is_ffi_call(n)]
    for call in ffi_calls:
        names = _ffi_param_names(w, call)
        if len(names) != len(call.args):
            continue
        for pname, arg in zip(names, call.args, strict=True):
            knob = _knob_of(pname) or ("num_ctas" if "num_cta" in pname.lower() else None)
            if knob is None:
                continue
            ref_values = {v for v in ref.knobs.get(knob, frozenset()) if v is not None}
            explicit_ref = {v for v in ref_values if isinstance(v, int) and v > 0}
            auto_slot = _is_auto_constant(w, arg)
            wrapper_values = (
                {v for v in _wrapper_knob_values(w, knob) if v is not None} if not auto_slot else set()
            )
            if explicit_ref and auto_slot:
                varied = len(explicit_ref) > 1 or max(explicit_ref) > 1
                out.append(
                    _finding(
                        w,
                        "compile_options",
                        arg,
                        f"FFI argument `{pname}` is always auto (-1) but the reference ({ref.source}) uses "
                        f"{knob}={sorted(explicit_ref)}",
                        confidence="high" if varied else "low",
                        knob=knob,
                        reference_values=sorted(explicit_ref),
                        expected_evidence="same launch count, slower kernel; CTA-count / cluster-size outlier",
                    )
                )
            elif ref.source == "analysis.json" and not explicit_ref and wrapper_values and not auto_slot:
                pinned = {v for v in wrapper_values if isinstance(v, int) and v > 0}
                if pinned:
                    out.append(
                        _finding(
                            w,
                            "compile_options",
                            arg,
                            f"wrapper pins {knob}={sorted(pinned)} but analysis.json has no explicit {knob} "
                            "(reference auto-picks)",
                            confidence="medium",
                            knob=knob,
                        )
                    )
    return _dedupe(out)


def _key_fields(node: ast.expr) -> list[tuple[str, ast.expr]]:
    elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    fields: list[tuple[str, ast.expr]] = []
    for e in elts:
        inner = e
        while (
            isinstance(inner, ast.Call)
            and inner.args
            and _call_name(inner) in ("int", "str", "bool", "tuple")
        ):
            inner = inner.args[0]
        if isinstance(inner, ast.Attribute):
            fields.append((inner.attr, e))
        elif isinstance(inner, ast.Name):
            fields.append((inner.id, e))
        else:
            fields.append((ast.unparse(inner), e))
    return fields


_ALIASES = {
    "q": {"q", "batch", "batch_size", "bs", "b"},
    "batch": {"q", "batch", "batch_size", "bs", "b"},
    "m": {"m", "n_rows", "rows"},
    "n": {"n", "hidden", "hidden_size", "n_cols", "cols"},
    "transpose_a": {"transpose_a", "trans_a", "ta"},
    "transpose_b": {"transpose_b", "trans_b", "tb"},
    "dtype": {"dtype", "out_dtype"},
    "device": {"device", "device_id", "dev"},
}


def _check_cache_key(w: _Wrapper, autotune_calls: list[ast.Call], raw: Mapping[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    wanted = raw.get("autotune_key")
    for call in autotune_calls:
        key = next(
            (k.value for k in call.keywords if k.arg == "key"), call.args[2] if len(call.args) > 2 else None
        )
        if key is None or isinstance(key, ast.Constant):
            out.append(_finding(w, "cache_key", call, "autotune_launch has no shape/dtype cache key"))
            continue
        if not isinstance(wanted, list) or not wanted:
            continue
        scope = _enclosing_function(w.tree, call)
        direct = [name for name, _ in _key_fields(key)]
        have = {name.lower() for name in direct} | _read_by_assignments(scope, direct)
        refused = _refused_parameters(scope)
        missing = []
        for field_name in wanted:
            f = str(field_name).lower()
            options = _ALIASES.get(f, {f})
            if not (have & options) and not any(f in h for h in have) and not (refused & options):
                missing.append(str(field_name))
        if missing:
            only_device = all(m.lower() in _ALIASES["device"] for m in missing)
            out.append(
                _finding(
                    w,
                    "cache_key",
                    key,
                    f"autotune key `{ast.unparse(key)}` lacks analysis.json autotune_key field(s) {missing}",
                    confidence="low" if only_device else "high",
                    missing=missing,
                    note="device matters only when one process benchmarks several GPUs (the cache is process-local)"
                    if only_device
                    else "",
                )
            )
    return out


def _read_by_assignments(scope: ast.FunctionDef | None, names: Iterable[str], depth: int = 3) -> set[str]:
    """Names (and attribute names) the assignments of ``names`` in ``scope`` read, ``depth`` levels
    deep, lower-cased: ``persistent = 1 if static_persistent else 0`` → ``{"static_persistent"}``."""
    if scope is None:
        return set()
    found: set[str] = set()
    frontier = set(names)
    for _ in range(depth):
        reads: set[str] = set()
        for node in ast.walk(scope):
            if not isinstance(node, ast.Assign):
                continue
            targets = {t.id for tgt in node.targets for t in ast.walk(tgt) if isinstance(t, ast.Name)}
            if targets & frontier:
                reads |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                reads |= {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)}
        frontier = reads - found
        found |= reads
        if not frontier:
            break
    return {n.lower() for n in found}


def _refused_parameters(scope: ast.FunctionDef | None) -> set[str]:
    """Parameters the function refuses when truthy (``if trans_a: raise ...`` at its top level),
    lower-cased: they reach the autotuner with one value only."""
    if scope is None:
        return set()
    params = {a.arg for a in scope.args.args + scope.args.kwonlyargs}
    out: set[str] = set()
    for stmt in scope.body:
        if (
            isinstance(stmt, ast.If)
            and isinstance(stmt.test, ast.Name)
            and stmt.test.id in params
            and stmt.body
            and all(isinstance(b, ast.Raise) for b in stmt.body)
        ):
            out.add(stmt.test.id.lower())
    return out


def _check_grad(w: _Wrapper, entries: list[ast.FunctionDef]) -> list[Finding]:
    out: list[Finding] = []
    for fn in entries:
        # outputs (``out=``) are written, not differentiated through: only inputs need detaching
        params = [
            a.arg
            for a in fn.args.args + fn.args.kwonlyargs
            if a.arg not in ("self", "kwargs") and not a.arg.startswith("out")
        ]
        body_nodes = list(ast.walk(fn))
        tensor_params = [
            p
            for p in params
            if any(
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id == p
                and n.attr in _TENSOR_HINTS
                for n in body_nodes
            )
        ]
        for p in tensor_params:
            detached = any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in ("detach", "detach_")
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == p
                for n in body_nodes
            )
            rejects = _raises_on_requires_grad(fn, p)
            if rejects is not None:
                out.append(
                    _finding(
                        w,
                        "grad_not_detached",
                        rejects,
                        f"`{fn.name}` raises when `{p}.requires_grad`; perf tests that create grad-enabled inputs fail before timing",
                    )
                )
            elif not detached and not _detached_via_helper(w, fn, p):
                out.append(
                    _finding(
                        w,
                        "grad_not_detached",
                        fn,
                        f"`{fn.name}` never detaches tensor input `{p}`",
                        confidence="medium",
                    )
                )
    return _dedupe(out)


def _detached_via_helper(w: _Wrapper, fn: ast.FunctionDef, param: str) -> bool:
    """``x = _prep(x)`` where the helper detaches its argument counts as detached."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in w.functions:
            if any(isinstance(a, ast.Name) and a.id == param for a in node.args):
                helper = w.functions[node.func.id]
                if any(isinstance(n, ast.Attribute) and n.attr == "detach" for n in ast.walk(helper)):
                    return True
    return False


def _raises_on_requires_grad(fn: ast.FunctionDef, param: str) -> ast.AST | None:
    for node in ast.walk(fn):
        if isinstance(node, ast.If) and any(
            isinstance(n, ast.Attribute)
            and n.attr == "requires_grad"
            and isinstance(n.value, ast.Name)
            and n.value.id == param
            for n in ast.walk(node.test)
        ):
            if any(isinstance(s, ast.Raise) for s in node.body):
                return node
    return None


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    out: list[Finding] = []
    for f in findings:
        key = (str(f.details.get("rule")), f.evidence, f.summary)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
