"""Make a TileGym checkout's cutile-rs wrapper of one op delegate to the reference's cuTile implementation.

Issue 18's GPU check (``bash bench/gpu_session.sh delegate``): a "cutile-rs" op that secretly runs the
reference must be flagged REF by E and FIXABLE by F on REAL captures. Usage, on a COPY of the checkout:

    python bench/delegating_wrapper.py TILEGYM_COPY KERNEL

The ``@register_impl(KERNEL, backend="cutile-rs")`` function of ``src/tilegym/ops/cutile_rs/KERNEL.py``
gets, as its first statements, an import of the ``@register_impl(KERNEL, backend="cutile")`` function of
``src/tilegym/ops/cutile/KERNEL.py`` and a ``return`` that calls it with the wrapper's own arguments (by
keyword, filtered to what the reference accepts unless it takes ``**kwargs``). Exit 2 (message on stderr)
when either function is not found; nothing is written then.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MARK = "# DELEGATION inserted by bench/delegating_wrapper.py (issue 18 GPU check)"


def _registered(tree: ast.Module, kernel: str, backend: str) -> ast.FunctionDef | None:
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            if (
                isinstance(dec, ast.Call)
                and ast.unparse(dec.func).endswith("register_impl")
                and dec.args
                and isinstance(dec.args[0], ast.Constant)
                and dec.args[0].value == kernel
                and any(
                    k.arg == "backend" and isinstance(k.value, ast.Constant) and k.value.value == backend
                    for k in dec.keywords
                )
            ):
                return node
    return None


def delegation_lines(candidate: ast.FunctionDef, reference: str, kernel: str, indent: str) -> list[str]:
    """The statements inserted at the top of the candidate function."""
    args = candidate.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    forward = ", ".join(f"{n}={n}" for n in names)
    extra = args.kwarg.arg if args.kwarg is not None else None
    return [
        f"{indent}{MARK}",
        f"{indent}import inspect as _inspect",
        f"{indent}from tilegym.ops.cutile.{kernel} import {reference} as _reference_impl",
        f"{indent}_args = dict({forward})",
        *([f"{indent}_args.update({extra})"] if extra else []),
        f"{indent}_accepted = _inspect.signature(_reference_impl).parameters",
        f"{indent}if not any(p.kind == p.VAR_KEYWORD for p in _accepted.values()):",
        f"{indent}    _args = {{k: v for k, v in _args.items() if k in _accepted}}",
        f"{indent}return _reference_impl(**_args)",
    ]


def patch(tilegym: Path, kernel: str) -> Path:
    """Rewrite the cutile-rs wrapper in place (see the module docstring); returns its path."""
    ops = Path(tilegym) / "src" / "tilegym" / "ops"
    cand_path, ref_path = ops / "cutile_rs" / f"{kernel}.py", ops / "cutile" / f"{kernel}.py"
    cand_text = cand_path.read_text(encoding="utf-8")
    cand = _registered(ast.parse(cand_text), kernel, "cutile-rs")
    ref = _registered(ast.parse(ref_path.read_text(encoding="utf-8")), kernel, "cutile")
    if cand is None or ref is None:
        missing = f"{cand_path} (backend='cutile-rs')" if cand is None else f"{ref_path} (backend='cutile')"
        raise SystemExit(f"error: no @register_impl({kernel!r}) function in {missing}")
    lines = cand_text.splitlines()
    first = cand.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        at = first.end_lineno or first.lineno  # after the docstring
    else:
        at = first.lineno - 1
    indent = lines[first.lineno - 1][: len(lines[first.lineno - 1]) - len(lines[first.lineno - 1].lstrip())]
    lines[at:at] = delegation_lines(cand, ref.name, kernel, indent)
    cand_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return cand_path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        path = patch(Path(argv[0]), argv[1])
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        print(f"error: cannot read the wrappers: {exc}", file=sys.stderr)
        return 2
    print(f"patched {path}: the cutile-rs op now returns the cuTile implementation's result")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
