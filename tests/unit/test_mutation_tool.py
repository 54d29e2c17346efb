"""bench/mutation_test.py: it finds its modules in the package layout, and each operator makes the
mutant it names (issue 35, item 2). The operator cases run on a SYNTHETIC module text; the layout
test on the real package (the old script copied ``workbench/`` and raised FileNotFoundError)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_test", REPO / "bench" / "mutation_test.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mutation_test"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


mt = _tool()

SYNTHETIC = """\
import re
SLOW = 1.05
NAMES = frozenset({"a", "b"})


def f(x, s, xs):
    if x > SLOW and s in NAMES:
        return True
    if not any(v == 2 for v in xs):
        return re.fullmatch(r"[a-z]+", s) is not None
    return s.startswith("p") or x * 3 < 7
"""


@pytest.fixture
def rule(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(mt.RULES, "synthetic", mt.Rule("synthetic.py", ("f",), ()))
    return "synthetic"


def _mutants(module: str) -> dict[str, str]:
    return {m.key: src for m, src in mt.generate(module, source=SYNTHETIC)}


def _one(mutants: dict[str, str], scope: str, operator: str, text: str = "") -> str:
    hits = [
        src
        for key, src in mutants.items()
        if key.split("|")[1:3] == [scope, operator] and text in key.split("|")[3]
    ]
    assert len(hits) == 1, (operator, [k for k in mutants if operator in k])
    return hits[0]


def test_each_operator_makes_the_mutant_it_names(rule: str) -> None:
    m = _mutants(rule)
    assert "SLOW = 1.0605" in _one(m, "SLOW", "const:1.05->1.0605")  # a threshold moved near its edge
    assert "x >= SLOW" in _one(m, "f", "cmp0:Gt->GtE")
    assert "s not in NAMES" in _one(m, "f", "cmp0:In->NotIn")
    assert "if x > SLOW:" in _one(m, "f", "drop_operand:1", "x > SLOW and")  # one operand of the and dropped
    assert "x > SLOW or s in NAMES" in _one(m, "f", "boolop:And->Or")
    assert "if any(" in _one(m, "f", "not:dropped")
    assert "not all(" in _one(m, "f", "call:any->all")
    assert "re.match(" in _one(m, "f", "call:fullmatch->match")
    assert "'p' in s" in _one(m, "f", "call:startswith->in")
    assert "x / 3" in _one(m, "f", "binop:Mult->Div")
    dropped = {src for key, src in m.items() if key.split("|")[1:3] == ["NAMES", "drop_member:0"]}
    assert dropped == {SYNTHETIC.replace('{"a", "b"}', "{'b'}").replace('"', "'")} or any(
        "frozenset({'b'})" in src for src in dropped
    )
    for src in m.values():  # every mutant is valid Python and differs from the original
        assert ast.dump(ast.parse(src)) != ast.dump(ast.parse(SYNTHETIC))


def test_keys_carry_no_line_number_so_an_unrelated_edit_keeps_them(rule: str) -> None:
    shifted = "# a comment\n\n" + SYNTHETIC
    made = [m.key for m, _ in mt.generate(rule, source=SYNTHETIC)]
    assert made == mt.keys(rule, SYNTHETIC) == mt.keys(rule, shifted) and len(made) == len(set(made))


def test_the_survivors_list_may_only_shrink() -> None:
    a = mt.Mutant("m", "f", 1, "op", "m|f|op|x", "survived")
    b = mt.Mutant("m", "g", 2, "op", "m|g|op|y", "killed")
    assert mt.check_survivors([a, b], {"m|f|op|x", "m|g|op|y"}) == ([], ["m|g|op|y"])
    assert mt.check_survivors([a, b], set()) == (["m|f|op|x"], [])


def test_every_rule_and_hand_mutant_is_found_in_the_package() -> None:
    """The old script read workbench/stats.py: gone since the package move (FileNotFoundError)."""
    for module, rule in mt.RULES.items():
        assert (REPO / "cutile_workbench" / rule.path).is_file(), module
        assert all((REPO / t).is_file() for t in rule.tests), module
        keys = mt.keys(module)  # raises SystemExit on a missing function
        assert keys and len(keys) == len(set(keys)), module
    for module, desc, old, _new in mt.HAND:
        assert (REPO / "cutile_workbench" / mt.RULES[module].path).read_text().count(old) == 1, desc


def test_the_committed_survivors_are_keys_the_tool_still_makes() -> None:
    """A listed survivor whose mutant no longer exists (the code moved on) must leave the list."""
    listed = json.loads((REPO / "bench" / "mutation_survivors.json").read_text())["survivors"]
    made = {k for module in mt.RULES for k in mt.keys(module)}
    assert not [k for k in listed if k not in made]
