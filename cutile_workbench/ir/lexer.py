"""Pygments lexer for MLIR / CUDA Tile IR (Pygments ships none).

Contract: :class:`MLIRLexer` tokenizes ``tileirdisasm`` / ``cuda-tile-opt`` / Rust-printer / Triton
Tile IR text: ``//`` comments, strings, SSA values (``%x``, ``%1#2``), block labels (``^bb0``),
symbols (``@entry``), types (``tile<16x1024xf32>``, ``partition_view<tile=(16x1024), …>``,
``tensor_view<?x?xf16, strides=[?,1]>``, ``ptr<f16>``, ``token``, ``i32``/``f16``/``bf16``…),
attribute dictionaries and keys (``optimization_hints``, ``latency``, ``allow_tma``,
``identities=[…]``, ``div_by<16>``, ``rounding<approx>``, ``flush_to_zero``), op names, numbers.
It never raises and never loses text (Pygments' contract: the concatenated token values equal the
input). It is registered under the alias ``mlir`` through the ``pygments.lexers`` entry point in
``pyproject.toml``; :func:`get_lexer` works without that entry point. :func:`highlight_terminal`
renders for ``--color`` (256-colour when the terminal says so).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from pygments.lexer import RegexLexer, bygroups, default, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

_TYPE_CTORS = (
    "tile",
    "partition_view",
    "tensor_view",
    "ptr",
    "memref",
    "tensor",
    "vector",
    "strided_view",
    "tma_descriptor",
)
_SCALAR_TYPES = (
    "token",
    "index",
    "none",
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "f8E4M3FN",
    "f8E5M2",
    "f16",
    "bf16",
    "tf32",
    "f32",
    "f64",
)
_ATTR_KEYS = (
    "optimization_hints",
    "latency",
    "allow_tma",
    "occupancy",
    "num_cta_in_cga",
    "simt_num_warps_in_cta",
    "identities",
    "padding_value",
    "strides",
    "shape",
    "dim",
    "dim_map",
    "token",
    "rounding_mode",
    "flush_to_zero",
    "step",
    "iter_values",
    "signed",
    "unsigned",
    "weak",
    "relaxed",
    "acquire",
    "release",
)
_STRUCT_KW = (
    "entry",
    "func",
    "return",
    "yield",
    "continue",
    "break",
    "for",
    "in",
    "to",
    "if",
    "else",
    "loop",
    "module",
    "cuda_tile.module",
    "tt.func",
    "tt.return",
)


class MLIRLexer(RegexLexer):
    """MLIR / CUDA Tile IR."""

    name = "MLIR (CUDA Tile IR)"
    aliases: ClassVar[list[str]] = ["mlir", "tileir", "cuda-tile"]
    filenames: ClassVar[list[str]] = ["*.mlir", "*.tileir"]
    mimetypes: ClassVar[list[str]] = ["text/x-mlir"]

    tokens: ClassVar[dict[str, list[Any]]] = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r'"(\\\\|\\"|[^"])*"', String),
            (r"#[A-Za-z_][\w.$-]*", Name.Decorator),  # attribute aliases (#loc, #cuda_tile…)
            (r"%[A-Za-z0-9_$.]+(?:#\d+)?(?::\d+)?", Name.Variable),
            (r"\^[A-Za-z0-9_$.]+", Name.Label),
            (r"@[A-Za-z0-9_$.]+", Name.Function),
            (
                r"(sm_\d+[a-z]?|default)(\s*)(=)(\s*)(\{)",
                bygroups(Name.Namespace, Whitespace, Operator, Whitespace, Punctuation),
            ),
            (r"(div_by|bounded|rounding|padding)(<)", bygroups(Name.Attribute, Punctuation), "angle"),
            (words(_TYPE_CTORS, suffix=r"(?=<)"), Keyword.Type, "type"),
            (words(_SCALAR_TYPES, prefix=r"(?<![\w.])", suffix=r"\b"), Keyword.Type),
            (words(_ATTR_KEYS, prefix=r"(?<![\w.%@])", suffix=r"\b(?=\s*[=<\[(]|\s|,|$)"), Name.Attribute),
            (words(_STRUCT_KW, prefix=r"(?<![\w.%@])", suffix=r"\b"), Keyword),
            (
                r"(true|false|zero|neg_inf|pos_inf|nan|approx|nearest_even|negative_inf|positive_inf)\b",
                Keyword.Constant,
            ),
            (r"-?0x[0-9A-Fa-f]+", Number.Hex),
            (r"-?\d+\.\d*(?:[eE][+-]?\d+)?|-?\d+[eE][+-]?\d+", Number.Float),
            (r"\d+(?=x)", Number.Integer),
            (r"-?\d+", Number.Integer),
            (r"[A-Za-z_][\w.$]*", Name.Builtin),  # op names (load_view_tko, mmaf, …) and the rest
            (r"->|=|\?|\*|x(?=\d)", Operator),
            (r"[{}()\[\]<>,:;]", Punctuation),
            (r".", Text),
        ],
        "type": [
            (r"<", Punctuation, "angle"),
            default("#pop"),
        ],
        "angle": [
            (r"<", Punctuation, "#push"),
            (r">", Punctuation, "#pop"),
            (r"\n", Whitespace, "#pop"),  # an unclosed '<' never swallows the rest of the file
            (r"\s+", Whitespace),
            (r"\?", Operator),
            (r"(\d+)(x)", bygroups(Number.Integer, Operator)),
            (r"x(?=[A-Za-z])", Operator),
            (words(_TYPE_CTORS, suffix=r"(?=<)"), Keyword.Type),
            (words(_SCALAR_TYPES, suffix=r"\b"), Keyword.Type),
            (r"(tile|strides|dim_map|padding_value|shape)(?=\s*=)", Name.Attribute),
            (r"%[A-Za-z0-9_$.]+", Name.Variable),
            (r"-?\d+\.\d*(?:[eE][+-]?\d+)?", Number.Float),
            (r"-?\d+", Number.Integer),
            (r"[A-Za-z_][\w.$]*", Keyword.Constant),
            (r"[=,()\[\]{}:]", Punctuation),
            (r".", Text),
        ],
    }


def get_lexer() -> MLIRLexer:
    """The lexer instance, without relying on the Pygments plugin entry point."""
    return MLIRLexer(stripnl=False, ensurenl=False)


def highlight_terminal(text: str, *, force_256: bool | None = None) -> str:
    """ANSI-coloured text for ``--color`` (TerminalFormatter, or Terminal256 on 256-colour terms)."""
    from pygments import highlight
    from pygments.formatters import Terminal256Formatter, TerminalFormatter

    use_256 = force_256 if force_256 is not None else "256" in os.environ.get("TERM", "")
    formatter = Terminal256Formatter(style="monokai") if use_256 else TerminalFormatter()
    return highlight(text, get_lexer(), formatter)
