"""A tiny, side-effect-free evaluator for the expressions TileGym test files use in ``parametrize``.

Contract: evaluates an ``ast`` expression (list literals, comprehensions, ``range``,
``itertools.product``, ``2**i``, ``torch.float16``, ``pytest.param``, small ``ids=`` lambdas, the
class-body ``if is_backend_available(...)`` idiom) without importing or executing the test file.
Anything outside that subset raises :class:`Unresolvable` naming the line, so callers can say
"cannot derive statically" instead of guessing. :meth:`StaticEvaluator.run_function` also runs the
body of a small module-level function (assignments, ``for``, ``if/elif``, ``yield``, ``return``,
calls to other module functions, ``SimpleNamespace(...)`` → :class:`Namespace`): enough for the
autotune-config generators of TileGym's op wrappers, whose branches on
``torch.cuda.get_device_capability()`` are resolved from the assumptions. Environment-dependent calls are answered from an
explicit :class:`Assumptions` value (which backends are available, the device capability), which
callers must report next to any result derived from it.
"""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cutile_workbench.pystatic.pysource import dotted_name, walk_no_nested


class Unresolvable(Exception):
    """The expression uses something the static evaluator does not model."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class Assumptions:
    """Answers for environment-dependent calls met while evaluating a test file statically."""

    available_backends: frozenset[str] = frozenset({"cutile", "cutile-rs", "triton", "pytorch"})
    device_capability: tuple[int, int] = (9, 0)  # H200 (sm_90), the machine the docs measured on

    def describe(self) -> str:
        backends = ", ".join(sorted(self.available_backends))
        return (
            f"assumed is_backend_available() True for {{{backends}}}; "
            f"torch.cuda.get_device_capability() = {self.device_capability}"
        )


@dataclass(frozen=True)
class DType:
    """Stand-in for ``torch.<name>`` attribute values: ``repr`` is ``torch.float16`` like torch's."""

    qualname: str

    def __repr__(self) -> str:
        return self.qualname

    def __str__(self) -> str:
        return self.qualname


@dataclass(frozen=True)
class Namespace:
    """A ``SimpleNamespace(k=v, ...)`` built by the evaluated code (an autotune config)."""

    fields: tuple[tuple[str, Any], ...]
    line: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.fields)


@dataclass(frozen=True)
class FunctionResult:
    """What :meth:`StaticEvaluator.run_function` produced: the return value, or the yielded items."""

    value: Any
    yielded: tuple[Any, ...]
    is_generator: bool

    @property
    def items(self) -> list[Any]:
        """The sequence the caller iterates: yielded items of a generator, else the returned value."""
        if self.is_generator:
            return list(self.yielded)
        return list(self.value) if isinstance(self.value, (list, tuple)) else [self.value]


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


_MAX_STEPS = 200_000  # statements one run_function may execute (loops over parametrize-sized lists)
_MAX_DEPTH = 8  # nested module-function calls


@dataclass(frozen=True)
class Param:
    """A ``pytest.param(*values, id=...)`` element."""

    values: tuple[Any, ...]
    id: str | None = None


@dataclass
class Closure:
    """A lambda from the test file, callable through the evaluator (for ``ids=`` callables)."""

    node: ast.Lambda
    evaluator: StaticEvaluator
    scope: Mapping[str, Any] = field(default_factory=dict)
    __name__: str = "<lambda>"

    def __call__(self, *args: Any) -> Any:
        params = [a.arg for a in self.node.args.args]
        if len(params) != len(args):
            raise Unresolvable("lambda called with the wrong number of arguments", self.node.lineno)
        local = dict(self.scope)
        local.update(zip(params, args, strict=True))
        return self.evaluator.eval(self.node.body, local)


_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_MAX_ITEMS = 100_000  # a comprehension bigger than this is not a test parametrize list


def _bounded(iterable: Any) -> list[Any]:
    """Materialize at most _MAX_ITEMS items (``list(range(10**12))`` must not hang the workbench)."""
    items = list(itertools.islice(iter(iterable), _MAX_ITEMS + 1))
    if len(items) > _MAX_ITEMS:
        raise Unresolvable(f"sequence longer than {_MAX_ITEMS} items")
    return items


def _safe_binop(op: type[ast.operator], left: Any, right: Any) -> Any:
    """Refuse arithmetic whose result would be huge (a parametrize list never needs it)."""
    if op is ast.Pow and isinstance(left, (int, float)) and isinstance(right, (int, float)):
        if abs(right) > 256 or (abs(left) > 2**32 and abs(right) > 8):
            raise Unresolvable("exponent too large to evaluate statically")
    if op is ast.Mult:
        for seq, n in ((left, right), (right, left)):
            if (
                isinstance(seq, (str, bytes, list, tuple))
                and isinstance(n, int)
                and len(seq) * max(n, 0) > _MAX_ITEMS
            ):
                raise Unresolvable("repetition too large to evaluate statically")
    return _BINOPS[op](left, right)


def _isinstance(value: Any, kinds: Any) -> bool:
    kinds_t = kinds if isinstance(kinds, tuple) else (kinds,)
    return any(isinstance(k, type) and isinstance(value, k) for k in kinds_t)


def _hasattr(value: Any, name: str) -> bool:
    # DType deliberately has no __name__ (torch.dtype has none either); Closures do.
    return hasattr(value, name)


class StaticEvaluator:
    """Evaluate expressions against a names table built by :meth:`run_body` (class/module bodies)."""

    def __init__(self, assumptions: Assumptions | None = None) -> None:
        self.assumptions = assumptions or Assumptions()
        self.names: dict[str, Any] = {}
        #: module-level functions callable from evaluated code (``run_body`` records them)
        self.functions: dict[str, ast.FunctionDef] = {}
        self._steps = 0
        self._depth = 0
        self._builtins: dict[str, Any] = {
            "range": range,
            "list": _bounded,
            "tuple": lambda it=(): tuple(_bounded(it)),
            "len": len,
            "str": str,
            "int": int,
            "float": float,
            "bool": bool,
            "repr": repr,
            "sorted": lambda it: sorted(_bounded(it)),
            "zip": zip,
            "enumerate": enumerate,
            "isinstance": _isinstance,
            "hasattr": _hasattr,
            "min": min,
            "max": max,
        }

    # ------------------------------------------------------------------ statements
    def run_body(self, body: list[ast.stmt], *, stop_at: ast.stmt | None = None) -> None:
        """Interpret simple assignments and ``if`` blocks of a module or class body, in order.

        Statements the evaluator cannot model are skipped, and a name whose value cannot be
        computed is recorded as unresolvable so a later use reports where it came from.
        """
        for stmt in body:
            if stmt is stop_at:
                return
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.names[target.id] = self._try(stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                self.names[stmt.target.id] = self._try(stmt.value)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                current = self.names.get(stmt.target.id)
                op = _BINOPS.get(type(stmt.op))
                try:
                    if isinstance(current, Unresolvable) or op is None:
                        raise Unresolvable("augmented assignment not modelled", stmt.lineno)
                    self.names[stmt.target.id] = _safe_binop(type(stmt.op), current, self.eval(stmt.value))
                except Unresolvable as exc:
                    self.names[stmt.target.id] = exc
                except Exception as exc:  # arithmetic on odd values: keep it unresolvable
                    self.names[stmt.target.id] = Unresolvable(str(exc), stmt.lineno)
            elif isinstance(stmt, ast.If):
                try:
                    branch = stmt.body if self.eval(stmt.test) else stmt.orelse
                except Unresolvable:
                    continue
                self.run_body(branch, stop_at=stop_at)
            elif isinstance(stmt, ast.FunctionDef):
                self.functions[stmt.name] = stmt
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for alias in stmt.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    module = stmt.module if isinstance(stmt, ast.ImportFrom) else None
                    full = f"{module}.{alias.name}" if module else alias.name
                    self.names[bound] = _Module(full if alias.asname or module else bound)

    def _try(self, node: ast.expr) -> Any:
        try:
            return self.eval(node)
        except Unresolvable as exc:
            return exc
        except Exception as exc:  # e.g. TypeError from a modelled builtin on an odd value
            return Unresolvable(f"{type(exc).__name__}: {exc}", getattr(node, "lineno", None))

    # ------------------------------------------------------------------ expressions
    def eval(self, node: ast.expr, local: Mapping[str, Any] | None = None) -> Any:
        local = local or {}
        method = getattr(self, f"_eval_{type(node).__name__}", None)
        if method is None:
            raise Unresolvable(f"{type(node).__name__} expressions are not modelled", node.lineno)
        return method(node, local)

    def _eval_Constant(self, node: ast.Constant, local: Mapping[str, Any]) -> Any:
        return node.value

    def _eval_List(self, node: ast.List, local: Mapping[str, Any]) -> Any:
        return [self.eval(e, local) for e in node.elts]

    def _eval_Tuple(self, node: ast.Tuple, local: Mapping[str, Any]) -> Any:
        return tuple(self.eval(e, local) for e in node.elts)

    def _eval_Set(self, node: ast.Set, local: Mapping[str, Any]) -> Any:
        return {self.eval(e, local) for e in node.elts}

    def _eval_Name(self, node: ast.Name, local: Mapping[str, Any]) -> Any:
        if node.id in local:
            return local[node.id]
        if node.id in self.names:
            value = self.names[node.id]
            if isinstance(value, Unresolvable):
                raise Unresolvable(f"name '{node.id}' is not statically known ({value})", node.lineno)
            return value
        if node.id in self._builtins:
            return self._builtins[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        raise Unresolvable(f"unknown name '{node.id}'", node.lineno)

    def _eval_Attribute(self, node: ast.Attribute, local: Mapping[str, Any]) -> Any:
        dotted = dotted_name(node)
        if dotted:
            root = dotted.split(".")[0]
            base = local.get(root, self.names.get(root))
            if isinstance(base, _Module):
                qual = base.name + dotted[len(root) :]
                if qual.startswith("torch.") and qual.count(".") == 1:
                    return DType(qual)
                return _Module(qual)
        raise Unresolvable(f"attribute '{ast.unparse(node)}' is not modelled", node.lineno)

    def _eval_BinOp(self, node: ast.BinOp, local: Mapping[str, Any]) -> Any:
        if type(node.op) not in _BINOPS:
            raise Unresolvable("operator not modelled", node.lineno)
        try:
            return _safe_binop(type(node.op), self.eval(node.left, local), self.eval(node.right, local))
        except Unresolvable:
            raise
        except Exception as exc:
            raise Unresolvable(f"{type(exc).__name__}: {exc}", node.lineno) from exc

    def _eval_UnaryOp(self, node: ast.UnaryOp, local: Mapping[str, Any]) -> Any:
        value = self.eval(node.operand, local)
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        if isinstance(node.op, ast.Not):
            return not value
        raise Unresolvable("unary operator not modelled", node.lineno)

    def _eval_BoolOp(self, node: ast.BoolOp, local: Mapping[str, Any]) -> Any:
        values = [self.eval(v, local) for v in node.values]
        if isinstance(node.op, ast.And):
            result = values[0]
            for v in values:
                result = v
                if not v:
                    return v
            return result
        for v in values:
            if v:
                return v
        return values[-1]

    def _eval_Compare(self, node: ast.Compare, local: Mapping[str, Any]) -> Any:
        left = self.eval(node.left, local)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = self.eval(comp, local)
            fn = _CMPOPS.get(type(op))
            if fn is None or not fn(left, right):
                return False
            left = right
        return True

    def _eval_IfExp(self, node: ast.IfExp, local: Mapping[str, Any]) -> Any:
        return self.eval(node.body if self.eval(node.test, local) else node.orelse, local)

    def _eval_Subscript(self, node: ast.Subscript, local: Mapping[str, Any]) -> Any:
        value = self.eval(node.value, local)
        if isinstance(node.slice, ast.Slice):
            lo = self.eval(node.slice.lower, local) if node.slice.lower else None
            hi = self.eval(node.slice.upper, local) if node.slice.upper else None
            return value[lo:hi]
        try:
            return value[self.eval(node.slice, local)]
        except (IndexError, KeyError, TypeError) as exc:
            raise Unresolvable(f"subscript failed: {exc}", node.lineno) from exc

    def _eval_JoinedStr(self, node: ast.JoinedStr, local: Mapping[str, Any]) -> Any:
        parts: list[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue):
                inner = self.eval(value.value, local)
                conversions: dict[int, Callable[[Any], str]] = {115: str, 114: repr, 97: ascii}
                conv = conversions.get(value.conversion)
                if conv is not None:
                    inner = conv(inner)
                spec = self.eval(value.format_spec, local) if value.format_spec is not None else ""
                try:
                    parts.append(format(inner, spec))
                except (TypeError, ValueError) as exc:
                    raise Unresolvable(f"f-string format failed: {exc}", node.lineno) from exc
            else:
                raise Unresolvable("f-string part not modelled", node.lineno)
        return "".join(parts)

    def _eval_Lambda(self, node: ast.Lambda, local: Mapping[str, Any]) -> Any:
        return Closure(node, self, dict(local))

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp, local: Mapping[str, Any]) -> list[Any]:
        out: list[Any] = []

        def walk(index: int, scope: dict[str, Any]) -> None:
            if index == len(node.generators):
                out.append(self.eval(node.elt, scope))
                if len(out) > _MAX_ITEMS:
                    raise Unresolvable("comprehension too large", node.lineno)
                return
            gen = node.generators[index]
            for item in _bounded(self.eval(gen.iter, scope)):
                inner = dict(scope)
                self._bind(gen.target, item, inner)
                if all(self.eval(cond, inner) for cond in gen.ifs):
                    walk(index + 1, inner)

        walk(0, dict(local))
        return out

    def _eval_ListComp(self, node: ast.ListComp, local: Mapping[str, Any]) -> Any:
        return self._comprehension(node, local)

    def _eval_GeneratorExp(self, node: ast.GeneratorExp, local: Mapping[str, Any]) -> Any:
        return self._comprehension(node, local)

    def _bind(self, target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(value)
            if len(items) != len(target.elts):
                raise Unresolvable("unpacking length mismatch", target.lineno)
            for t, v in zip(target.elts, items, strict=True):
                self._bind(t, v, scope)
        else:
            raise Unresolvable("comprehension target not modelled", target.lineno)

    def _eval_Call(self, node: ast.Call, local: Mapping[str, Any]) -> Any:
        dotted = dotted_name(node.func) or ""
        tail = dotted.rsplit(".", 1)[-1]
        args = [self.eval(a, local) for a in node.args if not isinstance(a, ast.Starred)]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise Unresolvable("*args calls are not modelled", node.lineno)
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        if tail == "is_backend_available":
            if len(args) != 1:
                raise Unresolvable("is_backend_available() expects one argument", node.lineno)
            return args[0] in self.assumptions.available_backends
        if dotted.endswith("cuda.get_device_capability"):
            return self.assumptions.device_capability
        if tail == "SimpleNamespace":
            if node.args or any(k.arg is None for k in node.keywords):
                raise Unresolvable("SimpleNamespace() takes keyword arguments only here", node.lineno)
            return Namespace(
                tuple((k.arg, self.eval(k.value, local)) for k in node.keywords if k.arg), node.lineno
            )
        if isinstance(node.func, ast.Name) and node.func.id in self.functions and node.func.id not in local:
            if kwargs:
                raise Unresolvable(f"keyword arguments to {dotted}() are not modelled", node.lineno)
            result = self.run_function(self.functions[node.func.id], args)
            return list(result.yielded) if result.is_generator else result.value
        if dotted in ("pytest.param", "param"):
            ident = self.eval(kwargs["id"], local) if "id" in kwargs else None
            return Param(tuple(args), ident)
        if tail == "product" and dotted in ("itertools.product", "product"):
            repeat = self.eval(kwargs["repeat"], local) if "repeat" in kwargs else 1
            pools = [_bounded(a) for a in args]
            size = 1
            for pool in pools * (repeat if isinstance(repeat, int) and 0 <= repeat <= 16 else 17):
                size *= len(pool)
                if size > _MAX_ITEMS:
                    raise Unresolvable("itertools.product too large", node.lineno)
            return list(itertools.product(*pools, repeat=repeat))
        func: Any = self.eval(node.func, local) if isinstance(node.func, ast.Name) else None
        if func is not None and (isinstance(func, Closure) or func in self._builtins.values()):
            if kwargs:
                raise Unresolvable(f"keyword arguments to {dotted}() are not modelled", node.lineno)
            try:
                result = func(*args)
            except Unresolvable:
                raise
            except Exception as exc:
                raise Unresolvable(f"{dotted}() failed: {exc}", node.lineno) from exc
            return list(result) if isinstance(result, (zip, enumerate)) else result
        raise Unresolvable(f"call to '{dotted or ast.unparse(node.func)}' is not modelled", node.lineno)

    # ------------------------------------------------------------------ function bodies
    def run_function(self, fn: ast.FunctionDef, args: Sequence[Any] = ()) -> FunctionResult:
        """Run ``fn``'s body with positional ``args`` (defaults for the rest); see the module docstring."""
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        defaults = fn.args.defaults
        if len(args) > len(params) or fn.args.vararg or fn.args.kwonlyargs or fn.args.kwarg:
            raise Unresolvable(f"call of {fn.name}() is not modelled (signature)", fn.lineno)
        local: dict[str, Any] = dict(zip(params, args, strict=False))
        for name, default in zip(params[len(params) - len(defaults) :], defaults, strict=True):
            if name not in local:
                local[name] = self.eval(default)
        if len(local) < len(params):
            raise Unresolvable(f"{fn.name}() called without its required arguments", fn.lineno)
        is_generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in walk_no_nested(fn))
        yielded: list[Any] = []
        if self._depth >= _MAX_DEPTH:
            raise Unresolvable("module functions nest too deeply", fn.lineno)
        self._depth += 1
        try:
            self._exec(fn.body, local, yielded)
            value: Any = None
        except _Return as ret:
            value = ret.value
        except (Unresolvable, RecursionError):
            raise
        except Exception as exc:  # a modelled operation on odd values (e.g. comparing a tuple to None)
            raise Unresolvable(f"{fn.name}(): {type(exc).__name__}: {exc}", fn.lineno) from exc
        finally:
            self._depth -= 1
        return FunctionResult(value, tuple(yielded), is_generator)

    def _exec(self, body: Sequence[ast.stmt], local: dict[str, Any], yielded: list[Any]) -> None:
        for stmt in body:
            self._steps += 1
            if self._steps > _MAX_STEPS:
                raise Unresolvable("function body runs too long to evaluate statically", stmt.lineno)
            if isinstance(stmt, ast.Assign):
                value = self.eval(stmt.value, local)
                for target in stmt.targets:
                    self._bind(target, value, local)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                self._bind(stmt.target, self.eval(stmt.value, local), local)
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
                if type(stmt.op) not in _BINOPS:
                    raise Unresolvable("augmented operator not modelled", stmt.lineno)
                current = self.eval(stmt.target, local)
                local[stmt.target.id] = _safe_binop(type(stmt.op), current, self.eval(stmt.value, local))
            elif isinstance(stmt, ast.If):
                self._exec(stmt.body if self.eval(stmt.test, local) else stmt.orelse, local, yielded)
            elif isinstance(stmt, ast.For) and not stmt.orelse:
                for item in _bounded(self.eval(stmt.iter, local)):
                    self._bind(stmt.target, item, local)
                    self._exec(stmt.body, local, yielded)
            elif isinstance(stmt, ast.Return):
                raise _Return(self.eval(stmt.value, local) if stmt.value is not None else None)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Yield):
                yielded.append(self.eval(stmt.value.value, local) if stmt.value.value is not None else None)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.YieldFrom):
                yielded.extend(_bounded(self.eval(stmt.value.value, local)))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstring
            elif isinstance(stmt, (ast.Pass, ast.Assert)):
                continue
            else:
                raise Unresolvable(f"{type(stmt).__name__} statements are not modelled", stmt.lineno)


@dataclass(frozen=True)
class _Module:
    """An imported module or an attribute path inside one (``torch``, ``torch.cuda``)."""

    name: str


def iter_string_constants(node: ast.AST) -> Iterator[ast.Constant]:
    """Every string literal under ``node`` (used to find backend spellings with exact spans)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub
