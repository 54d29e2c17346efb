"""JSON decoding that only ever fails with a located ``InputError``.

Contract: ``loads_located(text, path, what)`` returns the decoded document or raises
``InputError`` naming ``path`` and the line: malformed JSON, nesting too deep (RecursionError) and
CPython's integer guard (a number of more than 4300 digits raises a plain ``ValueError``, which is
not a ``JSONDecodeError``) are all covered. ``unsafe_value(obj, max_depth)`` says why a decoded
document cannot be used downstream (too deep for recursive walkers, or a lone surrogate that cannot
be encoded), without recursing; ``loads_located`` refuses a lone surrogate (``"\\ud800"`` is valid JSON,
not valid Unicode: every writer and SQLite would fail on it later, unlocated) at its line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from cutile_workbench.errors import InputError

_LONG_INT = re.compile(r"\d{4301,}")  # sys.int_info.default_max_str_digits + 1


def loads_located(text: str, path: str, what: str = "invalid JSON") -> Any:
    """``json.loads`` whose every failure names ``path`` and, where knowable, the line."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError(f"{what}: nested too deeply", path=path) from None
    except ValueError as exc:  # the int-max-str-digits guard
        m = _LONG_INT.search(text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise InputError(f"{what}: {exc}", path=path, line=line) from None
    surrogate_escape_check(text, doc, path, what)
    return doc


#: a JSON escape of a UTF-16 surrogate (``\\ud800``): a lone one decodes to a str that cannot be encoded
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def surrogate_escape_check(
    text: str, doc: Any, path: str, what: str = "invalid JSON", first_line: int = 1
) -> None:
    """InputError (``path``, the line of the first such escape) when the decoded ``doc`` holds a lone
    surrogate; free unless ``text`` has a surrogate escape at all (a valid pair decodes to one char)."""
    m = _SURROGATE_ESCAPE.search(text)
    if m is None:
        return
    why = unsafe_value(doc, max_depth=1 << 30)
    if why is not None:
        raise InputError(f"{what}: {why}", path=path, line=first_line + text.count("\n", 0, m.start()))


def unsafe_value(obj: Any, max_depth: int) -> str | None:
    """Why a decoded document cannot be used downstream, or None: nested deeper than ``max_depth``
    (recursive walkers and ``json.dumps`` would hit the recursion limit) or holding a lone UTF-16
    surrogate (valid JSON ``"\\ud800"``, not valid Unicode: encoding it to UTF-8 fails). Walked with
    an explicit stack, so it never recurses itself."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return f"holds a lone UTF-16 surrogate ({value[:40]!a}), not valid Unicode"
            continue
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                return f"is nested more than {max_depth} levels deep"
            if isinstance(value, dict):
                for key in value:
                    if isinstance(key, str) and _SURROGATE.search(key):
                        return f"holds a lone UTF-16 surrogate in a key ({key[:40]!a}), not valid Unicode"
                children: Iterable[Any] = value.values()
            else:
                children = value
            # numbers, bools and None need no look: only strings and containers are pushed; a
            # container of those alone (a record's samples) is passed by its items' types (C speed)
            if set(map(type, children)) <= _SCALARS:
                continue
            stack.extend((item, depth + 1) for item in children if isinstance(item, (str, dict, list)))
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")
#: the JSON scalars that are not strings (exact types: a subclass is looked at item by item)
_SCALARS = {int, float, bool, type(None)}
