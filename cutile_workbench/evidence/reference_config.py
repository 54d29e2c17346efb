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
