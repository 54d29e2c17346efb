"""Parse Tile IR text (cuTile's ``tileirdisasm``/``cuda-tile-opt`` printer or the cutile-rs printer)
into one op graph: op kind, attributes and types, operands as references to defining ops, regions.

Contract:
- :func:`parse_ir` never raises on odd text. Each printed op is one :class:`Op` (program order,
  1-based source ``line``); ``operands`` are the SSA values an op uses, ``results`` the values it
  defines; region ops (``entry``, ``for``, ``if``, ``loop``, ``reduce``, ``scan``) own
  ``regions`` (op indices) with their block arguments (``entry`` arguments, ``for`` induction
  variable and ``iter_values``, ``(%lhs: …, %rhs: …)`` reduce bodies).
- ``Op.shape`` is the op with every SSA value written ``%`` and the spelling differences of the two
  printers removed (``#cuda_tile.optimization_hints<`` → ``<``, the hint target ``sm_90``/``sm_100``/
  ``default`` → ``sm_*``, ``rounding negative_inf`` → ``rounding<negative_inf>``, float literals
  in one notation, runs of spaces, the ``entry`` symbol → ``@ENTRY``, an empty entry hint dropped).
  Attributes (tile shapes, latency, allow_tma, num_cta_in_cga, occupancy…) are kept.
- Lines it cannot read as an op of :data:`KNOWN_OPS` (unknown ops, a generic-form op of another
  dialect version, garbage, a brace that closes nothing, a region never closed = truncated text) are
  listed in :attr:`IRGraph.unparsed` with their line numbers and the reason; they become ops of kind
  ``?`` whose ``shape`` is the normalized line text, so a caller can text-diff them and must never
  call a program with unparsed lines equivalent. In a truncated text the last op line (possibly
  cut mid-line) is one of them too.
- The ``module`` wrapper and ``loc`` information are not ops (dropped like the canonicalizer does).
Pure; no I/O, no Textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cutile_workbench.ir.canon import _brace_delta, strip_loc

#: cuda_tile op names (the dialect's ops as both printers spell them). An op not listed here is
#: "unparsed": its meaning is unknown, so no structural claim is made about it.
KNOWN_OPS: frozenset[str] = frozenset(
    """
absf absi addf addi andi assert assume atan2 atomic_cas_tko atomic_rmw_tko bitcast break broadcast cat
ceil cmpf cmpi constant continue cos cosh divf divi entry exp exp2 exti extract floor fma for ftof ftoi
get_global get_index_space_shape get_num_tile_blocks get_tensor_shape get_tile_block_id global if
int_to_ptr iota itof join_tokens load_ptr_tko load_view_tko log log2 loop make_partition_view
make_tensor_view make_token maxf maxi minf mini mmaf mmai mulf mulhii muli negf negi offset ori permute
pow print ptr_to_int ptr_to_ptr reduce remf remi reshape return rsqrt scan select shli shri sin sinh
sqrt store_ptr_tko store_view_tko subf subi tan tanh trunci xori yield
""".split()
)

REGION_OPS = frozenset({"entry", "for", "if", "loop", "reduce", "scan"})
#: the dialect's memory ops (token-ordered loads, stores and atomics): the structural diff pairs and
#: categorizes them as one family
MEMORY_OPS = frozenset(
    {"load_view_tko", "store_view_tko", "load_ptr_tko", "store_ptr_tko", "atomic_cas_tko", "atomic_rmw_tko"}
)

_VALUE = re.compile(r"%[A-Za-z0-9_$.]+(?:#\d+)?")
_RESULTS = re.compile(
    r"^((?:%[A-Za-z0-9_$.]+(?::\d+)?\s*,\s*)*%[A-Za-z0-9_$.]+(?::\d+)?)\s*=\s*(?=[A-Za-z_\"])"
)
_RESULT_ONE = re.compile(r"(%[A-Za-z0-9_$.]+)(?::(\d+))?")
_KIND = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)")
_ENTRY_SYM = re.compile(r"\bentry\s+@([^\s(),:<>{}]+)")
_ARG_DEF = re.compile(r"(%[A-Za-z0-9_$.]+)\s*:")
_FOR_IV = re.compile(r"\bfor\s+(%[A-Za-z0-9_$.]+)\s+in\b")
_ITER_DEF = re.compile(r"(%[A-Za-z0-9_$.]+)\s*=\s*%")
_MODULE = re.compile(r"^(?:cuda_tile\.)?module\b[^{]*\{$")
_HINT_PREFIX = re.compile(r"#cuda_tile\.optimization_hints<")
_HINT_EQ = re.compile(r"optimization_hints\s*=\s*<")
_HINT_KEY = re.compile(r"(?<=[<,] )(?:sm_\d+[a-z]?|default)(?= = \{)|(?<=<)(?:sm_\d+[a-z]?|default)(?= = \{)")
_EMPTY_HINT = re.compile(r"\s*optimization_hints=<sm_\* = \{\}>")
_ROUNDING = re.compile(r"\brounding\s+([a-z_]+)")
_FLOAT_LIT = re.compile(
    r"(<f(?:16|32|64)|<bf16|<tf32)(:\s*)([-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+))>"
)
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE = re.compile(r"\s+([:,)\]>])")


@dataclass(slots=True)
class Op:
    """One printed op (or, kind ``?``, one line that could not be read as an op)."""

    index: int
    kind: str
    line: int  # 1-based source line of the op's first line
    text: str  # the source line, ``loc`` removed, stripped
    shape: str  # normalized op text with SSA values as ``%`` (see module docstring)
    results: tuple[str, ...] = ()
    operands: tuple[str, ...] = ()
    parent: int | None = None  # the region op this op sits in (None: top level)
    region: int = 0  # which region of the parent (``if``: 0 then, 1 else)
    regions: list[list[int]] = field(default_factory=list)
    region_args: list[tuple[str, ...]] = field(default_factory=list)
    region_lines: list[tuple[int, str]] = field(
        default_factory=list
    )  # (line, text) of "(args) {", "} else {", "}"
    #: the normalized op text cut at its values: text = parts[0] + v0 + parts[1] + v1 … (values:
    #: ``fill_values``, results first), so a caller can print the op with its own value names
    fill_parts: tuple[str, ...] = ()
    fill_values: tuple[str, ...] = ()

    @property
    def parsed(self) -> bool:
        return self.kind != "?"


@dataclass(frozen=True)
class Unparsed:
    line: int
    text: str
    reason: str


@dataclass
class IRGraph:
    """All ops of one file in program order, the top-level op indices and what could not be parsed."""

    ops: list[Op]
    top: list[int]
    unparsed: list[Unparsed]
    entries: list[str]  # entry symbols in order
    definer: dict[str, tuple[int, int]]  # value → (op index, result index; -1-k for region arg k)

    @property
    def fully_parsed(self) -> bool:
        return not self.unparsed


def normalize_shape(text: str) -> str:
    """The printer-independent spelling of one op line (values still in place)."""
    s = _SPACES.sub(" ", text.strip())
    if "optimization_hints" in s:
        s = _HINT_PREFIX.sub("<", s)
        s = _HINT_EQ.sub("optimization_hints=<", s)
        s = _HINT_KEY.sub("sm_*", s)
        s = _EMPTY_HINT.sub("", s)
    if "rounding " in s:
        s = _ROUNDING.sub(r"rounding<\1>", s)
    if "<f" in s or "<bf16" in s or "<tf32" in s:
        s = _FLOAT_LIT.sub(lambda m: f"{m.group(1)}{m.group(2)}{float(m.group(3))!r}>", s)
    return _SPACE_BEFORE.sub(r"\1", s)


def _value_ref(v: str, multi: dict[str, str]) -> str:
    # ``%26`` of a ``%26:2`` op means its first result
    return multi.get(v, v)


_VALUE_SPLIT = re.compile(r"(%[A-Za-z0-9_$.]+(?:#\d+)?)")


@dataclass(frozen=True, slots=True)
class _LineInfo:
    """What an op line's template (its text with the values cut out) says, by value position."""

    kind: str
    why: str  # non-empty: not an op this parser knows (the reason)
    results: tuple[tuple[int, int], ...] = ()  # (value position, N of ``%x:N`` or 0)
    args: tuple[int, ...] = ()  # region arguments the line defines (entry args, for IV, iter_values)
    operands: tuple[int, ...] = ()
    operand_set: frozenset[int] = frozenset()
    shape: str = ""
    fill_parts: tuple[str, ...] = ()
    multi: bool = False  # a result is written ``%x:N`` (N results)


def _line_info(s: str, parts: list[str]) -> _LineInfo:
    values = parts[1::2]
    n_res = 0
    res: list[tuple[int, int]] = []
    body = s
    m = _RESULTS.match(s) if s.startswith("%") else None
    if m:
        for _name, count in _RESULT_ONE.findall(m.group(1)):
            res.append((n_res, int(count) if count else 0))
            n_res += 1
        body = s[m.end() :]
    km = _KIND.match(body)
    kind = km.group(1) if km else ""
    if kind not in KNOWN_OPS:
        why = f"unknown op {kind!r}" if kind else "not an op line"
        if kind.startswith("cuda_tile.") or body.startswith('"'):
            why = f"op spelled {(kind or body.split('(')[0])!r}: generic form or another dialect version"
        return _LineInfo(kind or "?", why)
    # definitions on the line, as positions among its values (same template: same positions)
    body_parts = _VALUE_SPLIT.split(body)
    body_values = body_parts[1::2]
    offset = n_res
    args: list[int] = []
    if kind == "entry":
        head = body.split(")", 1)[0]
        names = set(_ARG_DEF.findall(head))
        args = [offset + k for k, v in enumerate(body_values) if v in names]
    elif kind == "for":
        iv = _FOR_IV.search(body)
        if iv:
            args.append(offset + body_values.index(iv.group(1)))
        k = body.find("iter_values(")
        if k >= 0:
            defs = set(_ITER_DEF.findall(body[k:]))
            before = len(_VALUE_SPLIT.split(body[:k])) // 2
            args += [offset + j for j, v in enumerate(body_values) if j >= before and v in defs]
    operands = tuple(k for k in range(n_res, len(values)) if k not in args)
    shape_body = "%".join(body_parts[0::2])
    if kind == "entry":
        shape_body = _ENTRY_SYM.sub("entry @ENTRY", shape_body)
    norm = normalize_shape(shape_body)
    shape = f"{len(res)}{'+' if any(c for _, c in res) else ''}= {norm}" if res else norm
    template = "%".join(parts[0::2])
    if kind == "entry":
        template = _ENTRY_SYM.sub("entry @ENTRY", template)
    fill = tuple(normalize_shape(template).split("%"))
    if len(fill) != len(values) + 1:  # a literal '%' in the text: callers print the line instead
        fill = ()
    return _LineInfo(
        kind, "", tuple(res), tuple(args), operands, frozenset(operands), shape, fill, any(c for _, c in res)
    )


def parse_ir(text: str) -> IRGraph:
    """The op graph of one IR text (see module docstring). Never raises."""
    ops: list[Op] = []
    top: list[int] = []
    unparsed: list[Unparsed] = []
    entries: list[str] = []
    definer: dict[str, tuple[int, int]] = {}
    multi: dict[str, str] = {}
    # stack of open regions: (owner op index or -1 for the module wrapper, region number)
    stack: list[tuple[int, int]] = []
    cache: dict[tuple[str, int], _LineInfo] = {}  # op lines that differ only in value names parse alike

    def add_op(op: Op) -> None:
        ops.append(op)
        if stack and stack[-1][0] >= 0:
            owner, reg = stack[-1]
            op.parent, op.region = owner, reg
            ops[owner].regions[reg].append(op.index)
        else:
            top.append(op.index)

    def bad(no: int, s: str, reason: str) -> None:
        unparsed.append(Unparsed(no, s, reason))
        add_op(Op(len(ops), "?", no, s, normalize_shape(s)))

    def open_region(owner: int, args: tuple[str, ...], no: int, s: str) -> None:
        o = ops[owner]
        o.regions.append([])
        o.region_args.append(args)
        o.region_lines.append((no, s))
        for k, a in enumerate(args):
            definer[a] = (owner, -1 - k)
        stack.append((owner, len(o.regions) - 1))

    for no, raw in enumerate(text.split("\n"), 1):
        s = raw.strip()
        if not s or s.startswith("#loc") or s.startswith("//"):
            continue
        s = strip_loc(s).strip()
        if not s:
            continue
        if "module" in s and _MODULE.match(s):
            stack.append((-1, 0))
            continue
        if s == "}" or s.startswith("} else"):
            if not stack:
                bad(no, s, "'}' closes nothing")
                continue
            owner, _reg = stack.pop()
            if owner >= 0:
                ops[owner].region_lines.append((no, s))
                if s != "}":  # "} else {": the same op's next region
                    ops[owner].region_lines.pop()
                    open_region(owner, (), no, s)
            continue
        if s.startswith("(%") and s.endswith("{"):
            # reduce/scan body arguments: a region of the op printed just before
            owner = ops[-1].index if ops else -1
            if owner < 0 or ops[owner].kind not in REGION_OPS:
                bad(no, s, "region arguments with no region op before them")
                if s.endswith("{"):
                    stack.append((-2, 0))
                continue
            open_region(owner, tuple(_ARG_DEF.findall(s.split(")", 1)[0])), no, s)
            continue
        parts = _VALUE_SPLIT.split(s)
        template = "%".join(parts[0::2])
        # keyed with the value count too: a literal '%' (``addi %, %``) leaves the same template
        key = (template, len(parts))
        info = cache.get(key)
        if info is None:
            info = _line_info(s, parts)
            cache[key] = info
        kind = info.kind
        if info.why:
            bad(no, s, info.why)
            if _brace_delta(s) > 0:
                stack.append((-2, 0))  # its region's lines are read as ops of no known parent
            continue
        values = parts[1::2]
        if info.multi:  # a ``%x:N`` op: its results are ``%x#0`` … ``%x#N-1``
            results: list[str] = []
            for vi, count in info.results:
                name = values[vi]
                if count:
                    multi[name] = f"{name}#0"
                    results += [f"{name}#{k}" for k in range(count)]
                else:
                    results.append(name)
            results_t = tuple(results)
        else:
            results_t = tuple(values[vi] for vi, _ in info.results)
        args = tuple(values[k] for k in info.args) if info.args else ()
        if multi:
            operands = tuple(multi.get(values[k], values[k]) for k in info.operands)
            fill = [multi.get(v, v) if k in info.operand_set else v for k, v in enumerate(values)]
            for vi, count in info.results:
                if count:
                    fill[vi] = f"{values[vi]}#0"
            fill_values = tuple(fill)
        else:
            operands = tuple(values[k] for k in info.operands)
            fill_values = tuple(values)
        if kind == "entry":
            em = _ENTRY_SYM.search(s)
            if em and em.group(1) not in entries:
                entries.append(em.group(1))
        op = Op(
            len(ops),
            kind,
            no,
            s,
            info.shape,
            results_t,
            operands,
            fill_parts=info.fill_parts,
            fill_values=fill_values,
        )
        add_op(op)
        index = op.index
        for k, r in enumerate(results_t):
            definer[r] = (index, k)
        if s.endswith("{"):
            if kind in REGION_OPS:
                open_region(op.index, args, no, s)
            else:
                stack.append((-2, 0))
    if any(owner != -1 for owner, _ in stack):
        # truncated: every op whose region is still open is only partly known
        for owner, _ in stack:
            if owner >= 0:
                o = ops[owner]
                unparsed.append(Unparsed(o.line, o.text, "region never closed (truncated text?)"))
        last = ops[-1] if ops else None
        if (
            last is not None
            and last.parsed
            and not last.regions
            and not any(u.line == last.line for u in unparsed)
        ):
            # the text stops inside a region: its last op may be cut short mid-line, so it is read as text
            unparsed.append(
                Unparsed(last.line, last.text, "last line of a truncated text (may be cut short)")
            )
            ops[-1] = Op(
                last.index,
                "?",
                last.line,
                last.text,
                normalize_shape(last.text),
                parent=last.parent,
                region=last.region,
            )
    return IRGraph(ops, top, unparsed, entries, definer)
