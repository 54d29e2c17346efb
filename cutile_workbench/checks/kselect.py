"""Config selection: ``-k`` expressions for candidate and baseline from analysis.json's ``test_perf_configs``.

Contract:
- :func:`perf_configs` normalizes both forms of ``test_perf_configs`` (dict ``{group: {"test",
  "k_filter", "shapes": [...]}}`` and list ``[{"param_list": [...]}, ...]``, contract §2) into
  :class:`PerfConfig` rows; a wrong type raises ``InputError`` naming the JSON key path.
- :func:`build_k_expressions` turns the configs into one ``-k`` expression per test target and
  side. Each config becomes a term anchored on the backend token *and* the id brackets,
  ``[cutile_rs-2-2048-2048-2048-False-False-torch.float16]``, so ``cutile`` never matches
  ``cutile_rs`` and bmm's ``False-False`` never matches matmul's ``static_persistent-transpose_b``.
  A token that is a prefix of another token also gets ``and not <other>`` (contract §3.4). Ids with
  characters ``-k`` cannot spell (spaces, ``=``, commas) become an ``and`` of fragments and the
  target is marked ``exact=False`` — a collect-only check must then prove the selection.
- :func:`compare_selections` compares the ``(func_key, params)`` sets of the two sides' node ids;
  a run whose sides differ must be refused (:class:`SelectionDiff.ok` is False).
- :func:`simulate_k` applies pytest's own ``-k`` parser and matcher rules to node ids (used where
  collect-only cannot run, e.g. without torch).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from cutile_workbench.artifacts.testids import BACKEND_TOKENS, id_token, split_nodeid
from cutile_workbench.checks.static_eval import DType
from cutile_workbench.checks.testfile import DerivedCase
from cutile_workbench.errors import InputError

_IDENT_CHARS = re.compile(r"^[\w:+\-.\[\]\\/]+$")
_IDENT_FRAGMENT = re.compile(r"[\w:+\-.\[\]\\/]+")
_RESERVED = {"and", "or", "not"}
_ID_KEYS = ("id", "params", "test_id", "param_id", "nodeid")


@dataclass(frozen=True)
class PerfConfig:
    """One selected config from analysis.json, with the key path it came from."""

    key_path: str  # e.g. "test_perf_configs.static_persistent.shapes[1]"
    group: str | None
    test: str | None  # "tests/ops/test_bmm.py::Test_BMM_FWD::test_perf" when the group names one
    k_filter: str | None  # the hand-written filter A recorded, if any
    params: str | None  # test-id params (backend token removed) when the config spells it
    values: Mapping[str, Any] | tuple[Any, ...] | None = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class KTarget:
    """One pytest invocation's selection: the test node path, the backend token and ``-k``."""

    test: str | None
    token: str
    expr: str
    params: tuple[str, ...]
    exact: bool

    def pytest_args(self, *extra: str) -> list[str]:
        args = ["-m", "pytest"]
        if self.test:
            args.append(self.test)
        return [*args, "-k", self.expr, *extra]

    def command(self, python: str = "python", *extra: str) -> str:
        return shlex.join([python, *self.pytest_args(*extra)])


@dataclass(frozen=True)
class KSelection:
    """Candidate and baseline ``-k`` targets built from the same config list."""

    candidate: tuple[KTarget, ...]
    baseline: tuple[KTarget, ...]
    configs: tuple[PerfConfig, ...]
    notes: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return all(t.exact for t in (*self.candidate, *self.baseline))


@dataclass(frozen=True)
class SelectionDiff:
    """Config sets selected by the two sides, keyed ``(func_key, params)`` as E matches rows."""

    common: frozenset[tuple[str, str]]
    candidate_only: frozenset[tuple[str, str]]
    baseline_only: frozenset[tuple[str, str]]
    candidate_tokens: frozenset[str]
    baseline_tokens: frozenset[str]
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.common) and not self.candidate_only and not self.baseline_only and not self.problems

    def describe(self) -> str:
        lines = [f"matched configs: {len(self.common)}"]
        for label, rows in (("candidate only", self.candidate_only), ("baseline only", self.baseline_only)):
            for func, params in sorted(rows):
                lines.append(f"  {label}: {func}[…-{params}]")
        lines.extend(f"  problem: {p}" for p in self.problems)
        return "\n".join(lines)


# ---------------------------------------------------------------------------- analysis adapter


def _raw_analysis(analysis: Any) -> Mapping[str, Any]:
    """Accept ``cutile_workbench.artifacts.analysis.Analysis`` (via its ``raw`` dict) or the parsed JSON itself."""
    if isinstance(analysis, Mapping):
        return analysis
    raw = getattr(analysis, "raw", None)
    if isinstance(raw, Mapping):
        return raw
    raise InputError(
        "analysis is neither a parsed analysis.json nor an Analysis object", key="test_perf_configs"
    )


def perf_configs(analysis: Any, *, source: str | None = None) -> list[PerfConfig]:
    """Normalize ``test_perf_configs`` (dict or list form) into :class:`PerfConfig` rows."""
    raw = _raw_analysis(analysis)
    path = source or getattr(analysis, "path", None)
    if "test_perf_configs" not in raw:
        raise InputError("missing required field", path=path, key="test_perf_configs")
    configs = raw["test_perf_configs"]
    out: list[PerfConfig] = []
    if isinstance(configs, Mapping):
        for group, body in configs.items():
            key = f"test_perf_configs.{group}"
            if not isinstance(body, Mapping):
                raise InputError("group must be an object with 'shapes'", path=path, key=key)
            shapes = body.get("shapes", [])
            if not isinstance(shapes, list):
                raise InputError("'shapes' must be a list", path=path, key=f"{key}.shapes")
            test, k_filter = _opt_str(body, "test", key, path), _opt_str(body, "k_filter", key, path)
            for i, shape in enumerate(shapes):
                out.append(_config(shape, f"{key}.shapes[{i}]", str(group), test, k_filter, path))
    elif isinstance(configs, list):
        for gi, body in enumerate(configs):
            key = f"test_perf_configs[{gi}]"
            if not isinstance(body, Mapping):
                raise InputError("list element must be an object with 'param_list'", path=path, key=key)
            plist = body.get("param_list", [])
            if not isinstance(plist, list):
                raise InputError("'param_list' must be a list", path=path, key=f"{key}.param_list")
            group = body.get("name") or body.get("variant") or body.get("group")
            test, k_filter = _opt_str(body, "test", key, path), _opt_str(body, "k_filter", key, path)
            for i, item in enumerate(plist):
                out.append(
                    _config(
                        item, f"{key}.param_list[{i}]", str(group) if group else None, test, k_filter, path
                    )
                )
    else:
        raise InputError(
            "must be an object (dict form) or a list (list form)", path=path, key="test_perf_configs"
        )
    if not out:
        raise InputError(
            "holds no shapes (validate_analysis.sh: '0 shapes')", path=path, key="test_perf_configs"
        )
    return out


def _opt_str(body: Mapping[str, Any], name: str, key: str, path: Any) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError("must be a non-empty string", path=path, key=f"{key}.{name}")
    return value.strip()


def _config(
    item: Any, key: str, group: str | None, test: str | None, k_filter: str | None, path: Any
) -> PerfConfig:
    if isinstance(item, str):
        if not item.strip():
            raise InputError("empty config id", path=path, key=key)
        return PerfConfig(key, group, test, k_filter, _strip_token(item.strip()))
    if isinstance(item, Mapping):
        for id_key in _ID_KEYS:
            value = item.get(id_key)
            if value is not None:
                if not isinstance(value, str) or not value.strip():
                    raise InputError("config id must be a non-empty string", path=path, key=f"{key}.{id_key}")
                return PerfConfig(key, group, test, k_filter, _strip_token(value.strip()), dict(item))
        return PerfConfig(key, group, test, k_filter, None, dict(item))
    if isinstance(item, (list, tuple)):
        return PerfConfig(key, group, test, k_filter, None, tuple(item))
    raise InputError(
        f"config must be an id string, an object or a list, not {type(item).__name__}", path=path, key=key
    )


def _strip_token(text: str) -> str:
    """Accept a bare params id, ``token-params`` or a full node id; return the params part."""
    if "[" in text and text.endswith("]"):
        text = text[text.index("[") + 1 : -1]
    first, sep, rest = text.partition("-")
    return rest if sep and first in BACKEND_TOKENS else text


# ---------------------------------------------------------------------------- resolving values


def resolve_params(config: PerfConfig, cases: Sequence[DerivedCase]) -> list[str]:
    """Params strings of the derived cases a value-only config (no id) describes."""
    if config.values is None:
        raise InputError("config has neither an id nor values", key=config.key_path)
    matches: set[str] = set()
    for case in cases:
        if _case_matches(config.values, case.values):
            _, _, params = split_nodeid(case.nodeid)
            matches.add(params)
    if not matches:
        raise InputError("no test_perf case has these parameter values", key=config.key_path)
    return sorted(matches)


def _case_matches(want: Mapping[str, Any] | tuple[Any, ...], have: Mapping[str, Any]) -> bool:
    names = [n for n in have if n not in ("framework", "backend")]
    if isinstance(want, tuple):
        if len(want) != len(names):
            return False
        pairs = list(zip(names, want, strict=True))
    else:
        lowered = {n.lower(): n for n in names}
        pairs = [(lowered[k.lower()], v) for k, v in want.items() if k.lower() in lowered]
        if not pairs:
            return False
    return all(_loose_equal(have[name], value) for name, value in pairs)


def _loose_equal(actual: Any, wanted: Any) -> bool:
    if isinstance(actual, DType):
        text = str(wanted)
        return text == actual.qualname or "torch." + text == actual.qualname
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return actual is wanted or str(actual).lower() == str(wanted).lower()
    if isinstance(actual, (list, tuple)) and isinstance(wanted, (list, tuple)):
        return len(actual) == len(wanted) and all(
            _loose_equal(a, w) for a, w in zip(actual, wanted, strict=True)
        )
    return actual == wanted or str(actual) == str(wanted)


# ---------------------------------------------------------------------------- building -k


def k_term(token: str, params: str) -> tuple[str, bool]:
    """One config's ``-k`` term, and whether it is an exact anchored match."""
    spelled = f"[{token}-{params}]" if params else f"[{token}]"
    if _IDENT_CHARS.match(spelled):
        return spelled, True
    fragments = [f for f in _IDENT_FRAGMENT.findall(spelled) if f.lower() not in _RESERVED]
    return "(" + " and ".join(fragments) + ")", False


#: TileGym's own framework tokens (contract §3.4); the guard is about these, the anchored terms
#: already keep any other token (e.g. the workbench's profile suites) out
TILEGYM_TOKENS: tuple[str, ...] = ("cutile_rs", "cutile", "triton", "pytorch", "tilecpp")


def _token_guards(token: str) -> list[str]:
    """TileGym tokens that contain ``token`` as a substring (``cutile`` → ``cutile_rs``)."""
    return [other for other in TILEGYM_TOKENS if other != token and token in other]


def k_expression(token: str, params: Iterable[str]) -> tuple[str, bool]:
    """``-k`` expression selecting exactly ``params`` for backend ``token`` (and the exact flag)."""
    terms: list[str] = []
    exact = True
    for p in dict.fromkeys(params):  # keep order, drop duplicates
        term, is_exact = k_term(token, p)
        terms.append(term)
        exact = exact and is_exact
    if not terms:
        raise InputError("no configs to select", key="test_perf_configs")
    body = terms[0] if len(terms) == 1 else "(" + " or ".join(terms) + ")"
    guards = " ".join(f"and not {g}" for g in _token_guards(token))
    return f"{token} and {body}" + (f" {guards}" if guards else ""), exact


def build_k_expressions(
    analysis: Any,
    candidate_token: str,
    baseline_token: str,
    *,
    cases_by_test: Mapping[str, Sequence[DerivedCase]] | None = None,
    default_test: str | None = None,
) -> KSelection:
    """Candidate/baseline ``-k`` targets that select the same configs of analysis.json.

    ``candidate_token``/``baseline_token`` are id tokens or record keys (``cutile-rs`` is turned
    into ``cutile_rs``). ``cases_by_test`` (statically derived or collected cases per test path)
    is needed only for configs given as values without an id. ``default_test`` is the node path
    used when a group names no ``test``.
    """
    cand, base = id_token(candidate_token), id_token(baseline_token)
    if cand == base:
        raise InputError(f"candidate and baseline use the same backend token '{cand}'")
    for tok in (cand, base):
        if not tok or not _IDENT_CHARS.match(tok):
            raise InputError(f"'{tok}' is not a backend token -k can spell")
    configs = perf_configs(analysis)
    by_test: dict[str | None, list[str]] = {}
    notes: list[str] = []
    for cfg in configs:
        test = cfg.test or default_test
        if cfg.params is not None:
            params = [cfg.params]
        else:
            cases = (cases_by_test or {}).get(test or "")
            if not cases:
                raise InputError(
                    "config has no 'id'; give the test file so its parameters can be derived",
                    key=cfg.key_path,
                )
            params = resolve_params(cfg, cases)
            if len(params) > 1:
                notes.append(f"{cfg.key_path} matches {len(params)} test cases (values leave axes open)")
        by_test.setdefault(test, []).extend(params)
    cand_targets: list[KTarget] = []
    base_targets: list[KTarget] = []
    for test, params in by_test.items():
        unique = tuple(dict.fromkeys(params))
        for tok, out in ((cand, cand_targets), (base, base_targets)):
            expr, exact = k_expression(tok, unique)
            out.append(KTarget(test, tok, expr, unique, exact))
    for t in cand_targets:
        if not t.exact:
            notes.append(
                f"{t.test or '<test>'}: some ids contain characters -k cannot spell; verify with --show"
            )
    return KSelection(tuple(cand_targets), tuple(base_targets), tuple(configs), tuple(notes))


# ---------------------------------------------------------------------------- comparing / simulating


def compare_selections(cand_nodeids: Iterable[str], base_nodeids: Iterable[str]) -> SelectionDiff:
    """Compare the ``(func_key, params)`` config sets the two sides selected."""

    def keyed(ids: Iterable[str]) -> tuple[set[tuple[str, str]], set[str], list[str]]:
        rows: set[tuple[str, str]] = set()
        tokens: set[str] = set()
        unknown: list[str] = []
        for nodeid in ids:
            func, token, params = split_nodeid(nodeid)
            if not token:
                unknown.append(nodeid)
                continue
            rows.add((func, params))
            tokens.add(token)
        return rows, tokens, unknown

    c_rows, c_tokens, c_unknown = keyed(cand_nodeids)
    b_rows, b_tokens, b_unknown = keyed(base_nodeids)
    problems: list[str] = []
    for label, tokens in (("candidate", c_tokens), ("baseline", b_tokens)):
        if len(tokens) > 1:
            problems.append(f"{label} side selects several backends: {', '.join(sorted(tokens))}")
    if c_tokens and c_tokens == b_tokens:
        problems.append(f"both sides select the same backend {', '.join(sorted(c_tokens))}")
    for label, unknown in (("candidate", c_unknown), ("baseline", b_unknown)):
        if unknown:
            problems.append(f"{label} side has {len(unknown)} ids without a backend token, e.g. {unknown[0]}")
    if not c_rows and not b_rows:
        problems.append("neither side selects any config")
    return SelectionDiff(
        frozenset(c_rows & b_rows),
        frozenset(c_rows - b_rows),
        frozenset(b_rows - c_rows),
        frozenset(c_tokens),
        frozenset(b_tokens),
        tuple(problems),
    )


def keyword_names(nodeid: str, markers: Iterable[str] = ("parametrize",)) -> set[str]:
    """The names pytest's KeywordMatcher sees for a node id (item, class, module, dirs, callspec id)."""
    path, _, rest = nodeid.partition("::")
    names: set[str] = set(PurePosixPath(path).parts)  # module basename and its directories
    parts = rest.split("::") if rest else []
    names.update(parts)
    if parts and "[" in parts[-1] and parts[-1].endswith("]"):
        item = parts[-1]
        names.add(item[item.index("[") + 1 : -1])  # callspec.id is an extra keyword
        names.add("pytestmark")  # parametrize marks live in the function's __dict__
    names.update(markers)
    return names


def simulate_k(nodeids: Iterable[str], expr: str) -> list[str]:
    """Node ids that ``pytest -k expr`` would keep, using pytest's own expression parser."""
    try:
        from _pytest.mark.expression import Expression
    except ImportError as exc:  # pytest is a dev dependency of the workbench itself
        raise InputError("pytest is needed to evaluate -k expressions locally") from exc
    try:
        compiled = Expression.compile(expr)
    except Exception as exc:  # pytest raises its own ParseError type
        raise InputError(f"invalid -k expression {expr!r}: {exc}") from exc
    selected: list[str] = []
    for nodeid in nodeids:
        if compiled.evaluate(_Matcher(nodeid)):
            selected.append(nodeid)
    return selected


class _Matcher:
    """pytest's KeywordMatcher semantics: case-insensitive substring of any keyword name."""

    def __init__(self, nodeid: str) -> None:
        self._names = [n.lower() for n in keyword_names(nodeid)]

    def __call__(self, sub: str, /, **kwargs: str | int | bool | None) -> bool:
        if kwargs:
            raise InputError("-k expressions do not support call parameters")
        return any(sub.lower() in name for name in self._names)
