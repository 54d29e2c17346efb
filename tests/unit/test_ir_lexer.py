"""MLIR / Tile IR Pygments lexer (cutile_workbench.ir.lexer) on the real abridged excerpt and edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number

from cutile_workbench.ir.lexer import MLIRLexer, get_lexer, highlight_terminal

FIX = Path(__file__).parent.parent / "fixtures" / "ir"


def _tokens(text: str) -> list[tuple[object, str]]:
    return list(get_lexer().get_tokens(text))


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.glob("*.mlir")))
def test_lossless_and_no_error_tokens(name: str) -> None:
    text = (FIX / name).read_text()
    toks = _tokens(text)
    assert "".join(v for _, v in toks) == text
    assert not [v for t, v in toks if t in Error]


def test_token_kinds() -> None:
    line = (
        "  %tile_37, %tok = load_view_tko weak %pview_36[%loopIdx] token = %0 optimization_hints = "
        "<sm_90 = {allow_tma = false, latency = 10}> : partition_view<tile=(16x1024), padding_value = zero, "
        "tensor_view<?x?xf16, strides=[?,1]>> -> tile<16x1024xf16>, token  // note\n"
    )
    toks = [(t, v) for t, v in _tokens(line) if v.strip()]
    kinds = dict((v, t) for t, v in toks)
    assert kinds["%tile_37"] in Name.Variable
    assert kinds["load_view_tko"] in Name.Builtin
    assert kinds["optimization_hints"] in Name.Attribute
    assert kinds["latency"] in Name.Attribute
    assert kinds["sm_90"] in Name.Namespace
    assert kinds["partition_view"] in Keyword.Type and kinds["tensor_view"] in Keyword.Type
    assert kinds["f16"] in Keyword.Type
    assert kinds["16"] in Number.Integer
    assert kinds["// note"] in Comment
    entry = dict((v, t) for t, v in _tokens("entry @_rms_norm_kernel(%arg0: tile<ptr<f16>>) {\n"))
    assert entry["@_rms_norm_kernel"] in Name.Function and entry["entry"] in Keyword
    assert entry["ptr"] in Keyword.Type


def test_unclosed_angle_does_not_swallow_file() -> None:
    toks = _tokens("%a = op : tile<16x\n%b = addf %a, %a : tile<4xf32>\n")
    kinds = dict((v, t) for t, v in toks)
    assert kinds["%b"] in Name.Variable and kinds["addf"] in Name.Builtin


def test_terminal_output_is_coloured() -> None:
    out = highlight_terminal("%x = addf %a, %b : tile<4xf32>\n", force_256=True)
    assert "\x1b[" in out and "addf" in out
    assert "\x1b[" in highlight_terminal("%x = addf %a\n", force_256=False)


def test_registered_under_alias_mlir() -> None:
    from importlib.metadata import entry_points

    if not any(ep.name == "mlir" for ep in entry_points(group="pygments.lexers")):
        pytest.skip("package metadata predates the pygments.lexers entry point (reinstall -e .)")
    from pygments.lexers import get_lexer_by_name

    assert isinstance(get_lexer_by_name("mlir"), MLIRLexer)
