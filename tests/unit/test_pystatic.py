"""pystatic.pysource: the AST helpers the static checks and the evidence share (synthetic snippets)."""

from __future__ import annotations

import ast
from pathlib import Path

from cutile_workbench.pystatic.pysource import call_name, display_path, dotted_name


def _expr(src: str) -> ast.expr:
    return ast.parse(src, mode="eval").body


def _call(src: str) -> ast.Call:
    node = _expr(src)
    assert isinstance(node, ast.Call)
    return node


def test_call_name_is_the_called_name_or_attribute() -> None:
    assert call_name(_call("autotune_launch(a, b)")) == "autotune_launch"
    assert call_name(_call("torch.empty(3)")) == "empty"
    assert call_name(_call("fns[0](3)")) == ""


def test_dotted_name_only_for_name_attribute_chains() -> None:
    assert dotted_name(_expr("torch.cuda.Event")) == "torch.cuda.Event"
    assert dotted_name(_expr("x")) == "x"
    assert dotted_name(_expr("f().y")) is None


def test_display_path_from_the_checkout_src(tmp_path: Path) -> None:
    wrapper = tmp_path / "TileGym" / "src" / "tilegym" / "ops" / "cutile_rs" / "matmul.py"
    assert display_path(wrapper) == "src/tilegym/ops/cutile_rs/matmul.py"
    elsewhere = tmp_path / "w.py"
    assert display_path(elsewhere) == str(elsewhere)
