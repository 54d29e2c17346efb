"""JSON decoding that only ever fails with a located ``InputError``.

Contract: ``loads_located(text, path, what)`` returns the decoded document or raises
``InputError`` naming ``path`` and the line: malformed JSON, nesting too deep (RecursionError) and
CPython's integer guard (a number of more than 4300 digits raises a plain ``ValueError``, which is
not a ``JSONDecodeError``) are all covered.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cutile_workbench.errors import InputError

_LONG_INT = re.compile(r"\d{4301,}")  # sys.int_info.default_max_str_digits + 1


def loads_located(text: str, path: str, what: str = "invalid JSON") -> Any:
    """``json.loads`` whose every failure names ``path`` and, where knowable, the line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None
    except RecursionError:
        raise InputError(f"{what}: nested too deeply", path=path) from None
    except ValueError as exc:  # the int-max-str-digits guard
        m = _LONG_INT.search(text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        raise InputError(f"{what}: {exc}", path=path, line=line) from None
