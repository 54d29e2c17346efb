"""F's line-level fixes, derived from the attributed launches (issue 32): minimal edits of the wrapper.

Contract (pure): :func:`plan_line_edits` takes F's investigations and reads the wrapper sources
(a ``read(relpath) -> str`` callable) and returns the edits a demonstration applies, plus notes on
every proposed fix that cannot be applied and why. Each edit is a
:class:`~cutile_workbench.stages.f.demonstrate.WrapperEdit` (its diff is the whole change):

- ``replace_alloc``: an extra fill/copy activity issued at a line that allocates with
  ``torch.zeros/ones(_like)`` → ``torch.empty(_like)`` (same arguments), or a ``.clone()`` /
  ``.contiguous()`` there → removed; the re-run's correctness check (TileGym's test) is what decides
  whether the kernel writes every element;
- ``remove_canary``: an extra main-kernel launch issued by a statement of its own (an expression
  statement: its result is unused) → that statement deleted;
- ``route_fallback``: a library (PyTorch/cuBLAS) path taken instead of the FFI kernel, issued by a
  ``return`` inside an ``if`` that only guards it → that ``if`` deleted, so the call reaches the FFI
  launch below (the re-run shows whether the FFI accepts the shape).

Only lines an attributed launch points at are edited (``details["issued_at"]`` of the launch-count and
identity findings); a line the attribution does not name is never touched. Edits of one file are
applied bottom-up so the line numbers of the evidence stay valid.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from cutile_workbench.model import Investigation
from cutile_workbench.stages.f.demonstrate import EditBatch, EditRefused, WrapperEdit

_ALLOC = re.compile(r"\btorch\.(zeros|ones)(_like)?\(")
_COPY = re.compile(r"\.(clone|contiguous)\(\)")
_ALLOC_CLASSES = ("fill", "copy", "memset", "memcpy")


def _statement_at(tree: ast.Module, line: int) -> tuple[ast.stmt, list[ast.stmt]] | None:
    """The innermost statement starting at ``line`` and the body list that holds it."""
    best: tuple[ast.stmt, list[ast.stmt]] | None = None
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for st in body:
                if isinstance(st, ast.stmt) and st.lineno <= line <= (st.end_lineno or st.lineno):
                    if best is None or st.lineno >= best[0].lineno:
                        best = (st, body)
    return best


def _enclosing_function(tree: ast.Module, line: int) -> str:
    name = "<module>"
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno <= line <= (
            node.end_lineno or node.lineno
        ):
            name = node.name  # walk order: outer before inner, so the innermost wins
    return name


def _delete_lines(text: str, first: int, last: int) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[: first - 1] + lines[last:])


def _replace_line(text: str, line: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[line - 1] = new
    return "".join(lines)


def _edit(
    kind: str, text: str, relpath: str, line: int, why: str, variant: str | None, params: tuple[str, ...] = ()
) -> WrapperEdit:
    from dataclasses import replace

    return replace(_edit0(kind, text, relpath, line, why, variant), params=params)


def _edit0(kind: str, text: str, relpath: str, line: int, why: str, variant: str | None) -> WrapperEdit:
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines):
        raise EditRefused(f"{relpath}:{line} is not a line of the wrapper")
    old = lines[line - 1]
    fn = _enclosing_function(tree, line)
    if kind == "replace_alloc":
        if _ALLOC.search(old):
            new = _ALLOC.sub(lambda m: "torch.empty" + (m.group(2) or "") + "(", old)
        elif _COPY.search(old):
            new = _COPY.sub("", old, count=1)
        else:
            raise EditRefused(
                f"{relpath}:{line} allocates with nothing this action rewrites: {old.strip()!r}"
            )
        after = _replace_line(text, line, new)
        return WrapperEdit(
            "replace_alloc", variant, relpath, fn, new.strip(), old.strip(), why, (), text, after
        )
    found = _statement_at(tree, line)
    if found is None:
        raise EditRefused(f"{relpath}:{line}: no statement there")
    st, body = found
    if kind == "remove_canary":
        if not isinstance(st, ast.Expr) or not isinstance(st.value, ast.Call):
            raise EditRefused(
                f"{relpath}:{line} is not a statement of its own whose result is unused "
                f"({type(st).__name__}): removing it would change the wrapper's data flow"
            )
        if len(body) == 1:
            raise EditRefused(f"{relpath}:{line} is the only statement of its block")
        after = _delete_lines(text, st.lineno, st.end_lineno or st.lineno)
        return WrapperEdit(
            "remove_canary", variant, relpath, fn, "(removed)", ast.unparse(st), why, (), text, after
        )
    if kind == "route_fallback":
        guard = next(
            (
                n
                for n in ast.walk(tree)
                if isinstance(n, ast.If)
                and not n.orelse
                and any(b is st for b in n.body)
                and isinstance(n.body[-1], ast.Return)
            ),
            None,
        )
        if guard is None:
            raise EditRefused(
                f"{relpath}:{line} is not a return inside an `if` that only guards the fallback: the FFI "
                "path would have to be written, not re-routed"
            )
        after = _delete_lines(text, guard.lineno, guard.end_lineno or guard.lineno)
        return WrapperEdit(
            "route_fallback",
            variant,
            relpath,
            fn,
            "(the FFI launch below)",
            f"if {ast.unparse(guard.test)}: ...",
            why,
            (),
            text,
            after,
        )
    raise EditRefused(f"unknown action {kind!r}")


def _wanted(invs: Iterable[Investigation]) -> list[tuple[str, str, int, str, str | None, tuple[str, ...]]]:
    """(action, file, line, why, variant, params) per attributed extra/foreign launch, deduplicated."""
    out: dict[tuple[str, str, int], tuple[str, str, int, str, str | None, tuple[str, ...]]] = {}
    for inv in invs:
        if inv.verdict != "FIXABLE":
            continue
        variant = inv.rows[0].variant if inv.rows else None
        for f in inv.findings:
            issued: Sequence[dict[str, Any]] = f.details.get("issued_at") or () if f.fixable else ()
            for x in issued:
                file, line = x.get("file"), x.get("line")
                if not isinstance(file, str) or not isinstance(line, int):
                    continue
                cls = str(x.get("class", ""))
                what = f"`{x.get('kernel')}` x{x.get('count')} issued at {file}:{line}"
                if f.kind == "identity":
                    action, why = "route_fallback", f"launch attribution: the library path {what}"
                elif cls == "canary":
                    action, why = "remove_canary", f"launch attribution: canary {what}"
                elif cls in _ALLOC_CLASSES:
                    action, why = "replace_alloc", f"launch attribution: {cls} {what}"
                else:
                    continue
                prev = out.get((action, file, line))
                params = tuple(dict.fromkeys((*(prev[5] if prev else ()), *(r.params for r in inv.rows))))
                out[(action, file, line)] = (action, file, line, prev[3] if prev else why, variant, params)
    return list(out.values())


def plan_line_edits(
    invs: Sequence[Investigation], read: Callable[[str], str]
) -> tuple[list[WrapperEdit], list[str]]:
    """See the module docstring: (edits in application order, notes on fixes not applied and why)."""
    batch = EditBatch(read)
    for action, file, line, why, variant, params in sorted(_wanted(invs), key=lambda w: (w[1], -w[2])):
        batch.attempt(
            f"{action} at {file}:{line}",
            file,
            partial(_edit, action, relpath=file, line=line, why=why, variant=variant, params=params),
        )
    return batch.edits, batch.notes
