"""The config the reference really ran, from its own evidence (no IR, no analysis.json ``best_config`` needed).

Contract:
- :func:`decode_cutile_symbol` splits a cuTile Python kernel symbol (``<fn>_Kt1_<arg>_<arg>…``, as CUPTI
  records it) into its argument tokens: arrays ``A<ndim><dtype>_…``, scalars ``S<dtype>``, and the
  compile-time constants ``I<int>`` (``I_1`` is -1), ``B<0|1>`` (bool), ``F<16 hex digits>`` (an IEEE
  double). None for a symbol that is not cuTile-mangled (cutile-rs ``…_entry``, Triton, ATen).
- Constant names come from analysis.json's ``kernel_variants[].constants`` of the variant whose
  ``kernel_function`` is the symbol's function (when the count matches the constant tokens), else from
  the ``@ct.kernel`` signature in the reference wrapper source (parameters annotated ``Constant``).
- :func:`reference_config` combines them with the reference's configs function for the session's GPU
  (a :class:`~cutile_workbench.evidence.search_space.ConfigSpace`) and the captured launch (grid, block,
  registers, smem): the reference configs whose knobs agree with every decoded constant they carry
  are the ones that fit; one fit names THE config, several a short list, none says so. Knobs the
  symbol does not spell (``num_ctas``, ``occupancy``: compile options) are reported as pinned by the
  configs function or left open — never guessed. A kernel with no configs to choose from (not
  autotuned): the named constants are the config (:attr:`ReferenceConfig.config`).
- :func:`pin_by_launch` narrows the configs that fit, knob by knob, with the captured launch (issue 32):
  CUPTI's cluster dims (``cluster_x*y*z`` = ``num_ctas``) and the reference wrapper's own grid formula
  (its ``grid_fn(cfg)``-like function, evaluated statically with the config, the row's test params and
  the GPU's SM count, times the cluster size = the blocks CUPTI counts) inverted on the captured grid.
  Each knob says how it was pinned (:attr:`ReferenceConfig.pinned`); a knob stays open only when the
  evidence admits several values (then all of them are listed). :func:`pin_by_autotune` narrows with
  the reference autotuner's own record (its winner, from the run's ``autotune`` events) when it exists.
- A Triton reference symbol spells no constants; the recorded logs carry no Triton kernel metadata,
  so only ``num_warps`` (block.x / 32, from the capture) is known; the result says what is unknown and
  why. A capture without a symbol or without resources says that too.
"""

from __future__ import annotations

import ast
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cutile_workbench.evidence.search_space import AUTO, ConfigSpace, TuneConfig

_SUFFIX = re.compile(r"_K[a-z]\d+(?=_|$)")
_INT = re.compile(r"^I(\d+)$")
_BOOL = re.compile(r"^B([01])$")
_FLOAT = re.compile(r"^F([0-9a-f]{16})$")
_SCALAR = re.compile(r"^S[a-z]+\d*$")
_ARRAY = re.compile(r"^A\d+[a-z]+\d*$")
TRITON_SOURCE = "block.x / 32 of the captured launch"  # Triton: one CTA = num_warps warps


@dataclass(frozen=True)
class SymbolArg:
    """One argument token group of a cuTile symbol."""

    kind: str  # "array" | "scalar" | "int" | "bool" | "float"
    text: str  # as spelled in the symbol
    value: Any = None  # constants only

    @property
    def is_constant(self) -> bool:
        return self.kind in ("int", "bool", "float")


@dataclass(frozen=True)
class DecodedSymbol:
    function: str  # ``_static_persistent_matmul_kernel``
    args: tuple[SymbolArg, ...]

    @property
    def constants(self) -> tuple[SymbolArg, ...]:
        return tuple(a for a in self.args if a.is_constant)


def decode_cutile_symbol(symbol: str) -> DecodedSymbol | None:
    """See the module docstring (None: not a cuTile-mangled symbol)."""
    m = _SUFFIX.search(symbol)
    if m is None:
        return None
    function, rest = symbol[: m.start()], symbol[m.end() :].lstrip("_")
    tokens = rest.split("_") if rest else []
    args: list[SymbolArg] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "I" and i + 1 < len(tokens) and tokens[i + 1].isdigit():  # ``I_1``: negative int
            args.append(SymbolArg("int", f"I_{tokens[i + 1]}", -int(tokens[i + 1])))
            i += 2
            continue
        if (mi := _INT.match(tok)) is not None:
            args.append(SymbolArg("int", tok, int(mi.group(1))))
        elif (mb := _BOOL.match(tok)) is not None:
            args.append(SymbolArg("bool", tok, mb.group(1) == "1"))
        elif (mf := _FLOAT.match(tok)) is not None:
            args.append(SymbolArg("float", tok, struct.unpack(">d", bytes.fromhex(mf.group(1)))[0]))
        elif _SCALAR.match(tok):
            args.append(SymbolArg("scalar", tok))
        elif _ARRAY.match(tok):
            # an array's layout tokens follow it (``1v8l0``, ``2t1``, ``3i16``, ``p16``): they start with a
            # digit or ``p``, never with an argument letter
            parts = [tok]
            while i + 1 < len(tokens) and re.match(r"^(\d|p\d)", tokens[i + 1]):
                i += 1
                parts.append(tokens[i])
            args.append(SymbolArg("array", "_".join(parts)))
        else:
            return DecodedSymbol(function, tuple(args))  # a truncated or unknown tail: keep what decoded
        i += 1
    return DecodedSymbol(function, tuple(args))


def kernel_constant_names(source: Path, function: str) -> list[str] | None:
    """Names of the ``Constant``-annotated parameters of ``@ct.kernel def <function>`` (None: not found)."""
    try:
        tree = ast.parse(Path(source).read_text(encoding="utf-8"), filename=str(source))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    aliases = {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign) and "Constant" in ast.unparse(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }  # ``ConstInt = ct.Constant[int]``
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            out = []
            for a in node.args.args:
                ann = ast.unparse(a.annotation) if a.annotation is not None else ""
                if "Constant" in ann or ann in aliases:
                    out.append(a.arg)
            return out
    return None


@dataclass(frozen=True)
class ReferenceConfig:
    """What the reference ran for one config, and how sure that is."""

    params: str
    backend: str | None
    symbol: str | None
    constants: tuple[tuple[str, Any], ...] = ()  # decoded, as the kernel spells them
    constants_source: str = ""  # where the names came from
    fits: tuple[TuneConfig, ...] = ()  # reference configs consistent with the evidence
    space_origin: str = ""
    launch: str = ""  # "grid (132, 1, 1), block (256, 1, 1), 255 registers/thread, 196760 B smem"
    unknown: tuple[str, ...] = ()  # what is unknown and why
    open_knobs: tuple[str, ...] = ()  # knobs the configs that fit leave open
    #: how each knob was pinned, e.g. "occupancy=2: grid_fn in bmm.py:254 on the captured grid 264"
    pinned: tuple[str, ...] = ()

    @property
    def config(self) -> TuneConfig | None:
        """THE config: the one reference config that fits, or — for a kernel with no configs to choose from —
        the named constants themselves; None when the evidence does not pin one."""
        if len(self.fits) == 1:
            return self.fits[0]
        if (
            not self.space_origin
            and self.constants
            and self.constants_source
            and not self.fits
            and not self.constants_source.startswith(TRITON_SOURCE)
        ):
            return TuneConfig.of(dict(self.constants), self.symbol or "")
        return None

    @property
    def decided(self) -> bool:
        return self.config is not None

    @property
    def constants_label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.constants)

    @property
    def tuned(self) -> TuneConfig | None:
        """The decoded constants as a config (canonical knobs), None when nothing decoded."""
        return TuneConfig.of(dict(self.constants), self.symbol or "") if self.constants else None

    @property
    def text(self) -> str:
        """One line: the answer, the evidence, what is unknown."""
        if not self.symbol:
            return "; ".join(self.unknown) or "no reference kernel captured"
        head = f"{self.constants_label} (from {self.constants_source})" if self.constants else ""
        if len(self.fits) == 1:
            ans = f"ran {self.fits[0].label}: the one config of {self.space_origin} that fits"
        elif self.fits:
            ans = (
                f"ran one of {len(self.fits)} configs of {self.space_origin} that fit: "
                + "; ".join(c.label for c in self.fits)
                + f" (open: {', '.join(self.open_knobs) or 'n/a'})"
            )
        elif self.config is not None:
            ans = f"ran {self.config.label}: no configs function to choose from, the constants are the config"
        elif self.constants and self.space_origin:
            ans = f"none of the configs of {self.space_origin} has these constants"
        else:
            ans = "config not pinned"
        text = f"{head}: {ans}" if head else ans
        if self.pinned:
            text += " (pinned: " + "; ".join(self.pinned) + ")"
        if self.launch:
            text += f" [launch: {self.launch}]"
        if self.unknown:
            text += " — unknown: " + "; ".join(self.unknown)
        return text


def _launch_text(grid: Any, block: Any, registers: Any, smem: Any) -> tuple[str, list[str]]:
    parts, unknown = [], []
    if grid is not None:
        parts.append(f"grid {tuple(grid)}")
    if block is not None:
        parts.append(f"block {tuple(block)}")
    if registers is not None:
        parts.append(f"{registers} registers/thread")
    if smem is not None:
        parts.append(f"{smem} B smem")
    if grid is None or registers is None:
        unknown.append("launch resources (grid/registers/smem): the capture does not carry them")
    return ", ".join(parts), unknown


def reference_config(
    params: str,
    backend: str | None,
    symbol: str | None,
    *,
    space: ConfigSpace | None,
    constant_names: Sequence[str] | None = None,
    names_source: str = "",
    grid: Any = None,
    block: Any = None,
    registers: int | None = None,
    smem: int | None = None,
) -> ReferenceConfig:
    """See the module docstring."""
    if not symbol:
        return ReferenceConfig(
            params,
            backend,
            None,
            unknown=(
                "the reference's capture carries no kernel symbol for this config: its config cannot be read",
            ),
        )
    launch, unknown = _launch_text(grid, block, registers, smem)
    decoded = decode_cutile_symbol(symbol)
    constants: list[tuple[str, Any]] = []
    if decoded is None:
        # Triton (or another JIT) symbol: no constants spelled; the logs carry no Triton metadata
        unknown.append(
            "the reference symbol spells no constants (not cuTile-mangled) and the logs carry no "
            "Triton kernel metadata (constexprs, num_stages)"
        )
        if block is not None and block[0] % 32 == 0 and block[1] == block[2] == 1:
            constants.append(("num_warps", block[0] // 32))  # Triton: one CTA = num_warps warps
        source = TRITON_SOURCE if constants else ""
    else:
        consts = decoded.constants
        if constant_names is not None and len(constant_names) == len(consts):
            constants = [(n, a.value) for n, a in zip(constant_names, consts, strict=True)]
            source = names_source
        else:
            unknown.append(
                f"the symbol's {len(consts)} constant(s) "
                + (
                    "cannot be named: no kernel signature or analysis.json constants list"
                    if constant_names is None
                    else f"do not line up with the {len(constant_names)} names of {names_source}"
                )
            )
            source = ""
    fits: tuple[TuneConfig, ...] = ()
    open_knobs: tuple[str, ...] = ()
    if constants and space is not None:
        want = TuneConfig.of(dict(constants))
        on = [k for k, v in want.knobs if k in space.knobs and v != AUTO]
        fits = tuple(c for c in space.configs if c.matches(want, on)) if on else ()
        if len(fits) > 1:
            open_knobs = tuple(k for k in sorted(space.knobs) if len({c.get(k) for c in fits}) > 1)
    elif space is None and decoded is None and constants:
        unknown.append("no reference configs (configs function or analysis.json) to match num_warps against")
    return ReferenceConfig(
        params,
        backend,
        symbol,
        tuple(constants),
        source,
        fits,
        space.origin if space is not None else "",
        launch,
        tuple(unknown),
        open_knobs,
    )


def names_for(
    symbol: str | None, *, analysis: Any = None, reference_wrapper: Path | None = None
) -> tuple[list[str] | None, str]:
    """(constant names, where they came from) for a cuTile symbol (see the module docstring)."""
    decoded = decode_cutile_symbol(symbol) if symbol else None
    if decoded is None:
        return None, ""
    fn = decoded.function
    n = len(decoded.constants)
    raw = getattr(analysis, "raw", None)
    variants = raw.get("kernel_variants") if isinstance(raw, dict) else None
    for i, v in enumerate(variants if isinstance(variants, list) else []):
        names = v.get("constants") if isinstance(v, dict) else None
        if (
            isinstance(names, list)
            and all(isinstance(x, str) for x in names)
            and len(names) == n
            and v.get("kernel_function") == fn
        ):
            return list(names), f"analysis.json kernel_variants[{i}].constants"
    if reference_wrapper is not None:
        signature = kernel_constant_names(reference_wrapper, fn)
        if signature is not None:
            return signature, f"the @ct.kernel signature of {fn} in {reference_wrapper.name}"
    return None, ""


# --------------------------------------------------------------------------- knob by knob (issue 32)

#: streaming multiprocessors per GPU (NVIDIA's data sheets), by a fragment of the name nvidia-smi reports
SM_COUNTS: tuple[tuple[str, int], ...] = (
    ("H200", 132),
    ("H100 PCIE", 114),
    ("H100", 132),
    ("GH200", 132),
    ("A100", 108),
    ("B200", 148),
)


def sm_count_for(gpu_name: str | None) -> int | None:
    """The SM count of a GPU by name (:data:`SM_COUNTS`), None when unknown."""
    if not gpu_name:
        return None
    upper = gpu_name.upper()
    return next((n for frag, n in SM_COUNTS if frag in upper), None)


class _NoValue(Exception):
    pass


def grid_functions(source: Path) -> list[ast.FunctionDef]:
    """Functions of the reference wrapper named like a grid function (``grid_fn``, ``_grid``, …) that
    take one argument (the config), nested ones included, in source order."""
    try:
        tree = ast.parse(Path(source).read_text(encoding="utf-8"), filename=str(source))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and "grid" in n.name.lower() and len(n.args.args) == 1
    ]


_ENV_ALIASES = {"batch_size": ("q", "b", "batch", "bs"), "q": ("batch_size", "b", "batch")}


def params_env(argnames: Sequence[str], params: str) -> dict[str, Any]:
    """``{name: value}`` of a test config's params string (``2-2048-…-torch.float16``) for its argnames."""
    tokens = params.split("-")
    if len(tokens) != len(argnames):
        return {}
    env: dict[str, Any] = {}
    for name, tok in zip(argnames, tokens, strict=True):
        value: Any = tok
        if re.fullmatch(r"\d+", tok):
            value = int(tok)
        elif tok in ("True", "False"):
            value = tok == "True"
        env[name] = value
    return env


def _lookup(env: dict[str, Any], name: str) -> Any:
    for key in (name, name.lower(), *_ENV_ALIASES.get(name.lower(), ())):
        if key in env:
            return env[key]
    raise _NoValue(name)


def evaluate_grid(
    fn: ast.FunctionDef, config: TuneConfig, env: dict[str, Any], num_sms: int
) -> tuple[int, ...] | None:
    """The programs grid ``fn(cfg)`` returns for ``config`` (None: it uses something not modelled).

    Modelled: assignments, ``+ - * // / %``, ``min``/``max``/``math.ceil``/``ceil``/``cdiv``,
    ``cfg.X`` and ``getattr(cfg, "x", default)`` (by canonical knob), names from the test params,
    and ``torch.cuda.get_device_properties(...).multi_processor_count`` (= ``num_sms``)."""
    import math

    from cutile_workbench.evidence.search_space import canonical_knob

    cfg_name = fn.args.args[0].arg
    knobs = dict(config.knobs)
    local: dict[str, Any] = {}

    def knob(attr: str, default: Any = None) -> Any:
        k = canonical_knob(attr)
        if k in knobs and knobs[k] != AUTO:
            return knobs[k]
        if default is not None:
            return default
        raise _NoValue(attr)

    def ev(node: ast.expr) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            return _lookup(env, node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == cfg_name:
                return knob(node.attr)
            if node.attr == "multi_processor_count":
                return num_sms
            raise _NoValue(ast.unparse(node))
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            if type(node.op) in ops:
                return ops[type(node.op)]
            if b == 0:
                raise _NoValue("division by zero")
            if isinstance(node.op, ast.FloorDiv):
                return a // b
            if isinstance(node.op, ast.Div):
                return a / b
            if isinstance(node.op, ast.Mod):
                return a % b
            raise _NoValue(ast.unparse(node))
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                default = ev(node.args[2]) if len(node.args) > 2 else None
                return knob(str(node.args[1].value), default)
            args = [ev(a) for a in node.args]
            if name in ("min", "max") and args:
                return min(args) if name == "min" else max(args)
            if name in ("math.ceil", "ceil") and len(args) == 1:
                return math.ceil(args[0])
            if name.endswith("cdiv") and len(args) == 2 and args[1]:
                return -(-args[0] // args[1])
            if name in ("int",) and len(args) == 1:
                return int(args[0])
        if isinstance(node, ast.Tuple):
            return tuple(ev(e) for e in node.elts)
        raise _NoValue(ast.unparse(node))

    try:
        for stmt in fn.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstring
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                try:
                    local[stmt.targets[0].id] = ev(stmt.value)
                except _NoValue:
                    continue  # unused locals may be unmodelled; a used one fails at its use
                continue
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                value = ev(stmt.value)
                grid = value if isinstance(value, tuple) else (value,)
                if not all(isinstance(g, int) and g > 0 for g in grid):
                    return None
                return tuple(int(g) for g in grid)
            return None
    except _NoValue:
        return None
    return None


def _blocks(grid: Any) -> int:
    out = 1
    for g in grid:
        out *= int(g)
    return out


def pin_by_launch(
    rc: ReferenceConfig,
    *,
    grid: Any = None,
    cluster: Any = None,
    grid_fns: Sequence[tuple[ast.FunctionDef, str]] = (),
    env: dict[str, Any] | None = None,
    num_sms: int | None = None,
) -> ReferenceConfig:
    """``rc`` with its fits narrowed by the captured launch (module docstring); unchanged when one or no
    config fits. ``grid_fns``: (function, "file:line") pairs of the reference wrapper."""
    from dataclasses import replace

    if len(rc.fits) <= 1:
        return rc
    fits = list(rc.fits)
    pinned = list(rc.pinned)
    unknown = list(rc.unknown)
    before_open = set(rc.open_knobs)
    csize = _blocks(cluster) if cluster is not None and all(int(c) > 0 for c in cluster) else None
    if csize is not None:
        keep = [c for c in fits if c.get("num_ctas") in (None, AUTO, csize)]
        if keep:
            fits = keep
            how = "pins" if "num_ctas" in before_open else "confirms"
            pinned.append(
                f"num_ctas={csize}: CUPTI's cluster dims {tuple(cluster)} of the reference's kernel {how} it"
            )
    if grid is not None and grid_fns and env and num_sms:
        blocks = _blocks(grid)
        for fn, where in grid_fns:
            computed = {c: evaluate_grid(fn, c, env, num_sms) for c in fits}
            if not any(v is not None for v in computed.values()):
                continue
            per_cluster = {
                c: (csize or (c.get("num_ctas") if isinstance(c.get("num_ctas"), int) else 1) or 1)
                for c in fits
            }
            keep = [c for c, g in computed.items() if g is not None and _blocks(g) * per_cluster[c] == blocks]
            if keep:
                narrowed = {k for k in before_open if len({c.get(k) for c in keep}) == 1}
                for k in sorted(narrowed - {p.split("=", 1)[0] for p in pinned}):
                    g = computed[keep[0]]
                    pinned.append(
                        f"{k}={keep[0].get(k)}: {fn.name} ({where}) gives {_blocks(g) if g else '?'} programs x "
                        f"{per_cluster[keep[0]]} CTAs = the captured grid {tuple(grid)} ({num_sms} SMs)"
                    )
                fits = keep
                break
            unknown.append(
                f"{fn.name} ({where}) gives no fitting config the captured grid {tuple(grid)}: "
                + ", ".join(f"{c.label} -> {computed[c]}" for c in fits)
            )
    elif len(fits) > 1 and grid is not None:
        why = [
            what
            for what, ok in (
                ("no grid function found in the reference wrapper", bool(grid_fns)),
                ("the row's test params could not be read", bool(env)),
                ("the GPU's SM count is unknown", bool(num_sms)),
            )
            if not ok
        ]
        if why:
            unknown.append("grid formula not inverted: " + "; ".join(why))
    if len(fits) == len(rc.fits) and pinned == list(rc.pinned):
        return replace(rc, unknown=tuple(unknown)) if unknown != list(rc.unknown) else rc
    open_knobs = tuple(k for k in sorted(before_open) if len({c.get(k) for c in fits}) > 1)
    return replace(rc, fits=tuple(fits), open_knobs=open_knobs, pinned=tuple(pinned), unknown=tuple(unknown))


_NS_ITEM = re.compile(r"(\w+)\s*=\s*(-?\d+(?:\.\d+)?|True|False|None|'[^']*'|\"[^\"]*\")")


def parse_config_repr(text: str) -> dict[str, Any] | None:
    """``namespace(TILE_M=256, occupancy=2)`` / ``{'tm': 64}`` (a tuner's config ``repr``) → knobs; None
    when nothing parses."""
    items = _NS_ITEM.findall(text) or re.findall(r"'(\w+)'\s*:\s*(-?\d+|True|False|None)", text)
    if not items:
        return None
    out: dict[str, Any] = {}
    for k, v in items:
        v = v.strip("'\"")
        out[k] = (
            int(v) if re.fullmatch(r"-?\d+", v) else {"True": True, "False": False, "None": None}.get(v, v)
        )
    return out


def pin_by_autotune(rc: ReferenceConfig, winner: str | None, source: str) -> ReferenceConfig:
    """``rc`` narrowed to the fits the reference's own tuning record's winner matches (every knob the
    winner spells that the configs carry); unchanged when nothing or everything matches."""
    from dataclasses import replace

    if len(rc.fits) <= 1 or not winner:
        return rc
    raw = parse_config_repr(winner)
    if not raw:
        return rc
    want = TuneConfig.of(raw)
    knobs = [k for k, _ in want.knobs if all(c.get(k) is not None for c in rc.fits)]
    keep = [c for c in rc.fits if c.matches(want, knobs)] if knobs else []
    if not keep or len(keep) == len(rc.fits):
        return rc
    before_open = set(rc.open_knobs)
    open_knobs = tuple(k for k in sorted(before_open) if len({c.get(k) for c in keep}) > 1)
    pinned = [
        *rc.pinned,
        *(
            f"{k}={keep[0].get(k)}: the reference's own autotune record ({source})"
            for k in sorted(before_open - set(open_knobs))
        ),
    ]
    return replace(rc, fits=tuple(keep), open_knobs=open_knobs, pinned=tuple(pinned))
