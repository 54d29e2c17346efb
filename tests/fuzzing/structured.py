"""Structure-aware mutations (issue 25): JSON type swaps, huge / negative / boundary numbers, nesting
bombs, applied to a JSON document, to the ``record_json`` payloads of a perf log, or to a TOML keymap.

Contract: every function is a pure function of ``(data, seed)`` — the same seed gives the same bytes —
and returns ``(bytes, operation names)`` like :func:`fuzzing.mutator.mutate`. Where the input does
not parse as the expected structure, the byte mutator is applied instead (named ``bytes:<op>``).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from .mutator import mutate

#: values that break naive handling: each JSON type, the int/float edges, huge and negative numbers
SWAP_VALUES: tuple[tuple[str, Any], ...] = (
    ("null", None),
    ("true", True),
    ("false", False),
    ("zero", 0),
    ("minus_one", -1),
    ("negative", -343),
    ("neg_float", -1.0),
    ("int_2_63", 2**63),
    ("int_2_64", 2**64),
    ("int_400_digits", int("9" * 400)),
    ("float_max", 1e308),
    ("float_tiny", 5e-324),
    ("string", "x"),
    ("empty_string", ""),
    ("numeric_string", "1.5"),
    ("list", [1, 2]),
    ("empty_list", []),
    ("dict", {"a": 1}),
    ("empty_dict", {}),
    ("nested_list", [[[[]]]]),
)
#: raw JSON tokens json.dumps cannot produce (non-finite numbers, ints over CPython's 4300-digit guard)
RAW_TOKENS: tuple[tuple[str, str], ...] = (
    ("nan", "NaN"),
    ("inf", "Infinity"),
    ("neg_inf", "-Infinity"),
    ("int_5000_digits", "7" * 5000),
    ("nest_3000", "[" * 3000 + "]" * 3000),
)
_RAW_MARK = "\x00raw\x00"


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:50]):  # long sample lists: the first entries are representative
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = value
    return doc


def _drop(doc: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return doc
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    del parent[path[-1]]
    return doc


def mutate_json_doc(doc: Any, rng: random.Random) -> tuple[Any, str, tuple[Any, ...]]:
    """One structural edit of ``doc`` (a deep copy is the caller's business): swap a node's value or type,
    or drop a key/element; returns (doc, op name, the path edited)."""
    paths = _paths(doc)
    path = rng.choice(paths)
    r = rng.random()
    if r < 0.15 and path:
        return _drop(doc, path), "drop", path
    if r < 0.35:
        name, token = rng.choice(RAW_TOKENS)
        return _set(doc, path, _RAW_MARK + token), f"raw:{name}", path
    name, value = rng.choice(SWAP_VALUES)
    return _set(doc, path, json.loads(json.dumps(value))), f"swap:{name}", path


def _dump(doc: Any) -> str:
    text = json.dumps(doc)
    return re.sub(r'"\\u0000raw\\u0000([^"]*)"', lambda m: m.group(1), text)


def mutate_json(data: bytes, seed: int, *, max_ops: int = 2) -> tuple[bytes, tuple[str, ...]]:
    """1..``max_ops`` structural edits of a JSON document (gzip is the caller's business)."""
    rng = random.Random(seed)
    try:
        doc = json.loads(data)
    except ValueError:
        out, ops = mutate(data, seed)
        return out, tuple(f"bytes:{o}" for o in ops)
    names = []
    for _ in range(rng.randint(1, max_ops)):
        doc, name, _path = mutate_json_doc(doc, rng)
        names.append(name)
        if isinstance(doc, str) and doc.startswith(_RAW_MARK):
            break
    return _dump(doc).encode(), tuple(names)


def mutate_record_json(data: bytes, seed: int) -> tuple[bytes, tuple[str, ...]]:
    """A structural edit of one ``record_json:`` payload of a perf log (the rest of the log unchanged)."""
    rng = random.Random(seed)
    lines = data.split(b"\n")
    idx = [i for i, ln in enumerate(lines) if ln.lstrip().startswith(b"record_json: ")]
    if not idx:
        out, ops = mutate(data, seed)
        return out, tuple(f"bytes:{o}" for o in ops)
    i = rng.choice(idx)
    head, _, payload = lines[i].partition(b"record_json: ")
    new, ops = mutate_json(payload, rng.randrange(2**32))
    lines[i] = head + b"record_json: " + new
    return b"\n".join(lines), tuple(f"record_json:{o}" for o in ops)


_TOML_EDITS = (
    ("nest_3000", lambda rng: "x = " + "[" * 3000 + "]" * 3000),
    ("inline_table_nest", lambda rng: "x = " + "{a = " * 500 + "1" + "}" * 500),
    ("int_5000_digits", lambda rng: "x = " + "7" * 5000),
    ("type_int", lambda rng: "app-report = 5"),
    ("type_list", lambda rng: 'app-report = ["f4"]'),
    ("type_table", lambda rng: "[keymap.app-report]\nkey = 1"),
    ("keymap_not_table", lambda rng: "keymap = 3"),
    (
        "many_lines",
        lambda rng: "".join(f'unknown-{i} = "f{i % 12 + 1}"\n' for i in range(rng.choice((1000, 5000)))),
    ),
    ("long_key_value", lambda rng: 'app-report = "' + "ctrl+" * 20_000 + 'f4"'),
    ("dup_key", lambda rng: 'app-report = "f4"\napp-report = "f5"'),
)


def mutate_keymap(data: bytes, seed: int) -> tuple[bytes, tuple[str, ...]]:
    """Append 1-2 hostile TOML edits to a keymap (sometimes byte mutations as well)."""
    rng = random.Random(seed)
    text = data.decode("utf-8", "replace")
    names = []
    for _ in range(rng.randint(1, 2)):
        name, edit = rng.choice(_TOML_EDITS)
        text += "\n" + edit(rng) + "\n"
        names.append(f"toml:{name}")
    out = text.encode()
    if rng.random() < 0.2:
        out, ops = mutate(out, rng.randrange(2**32), max_ops=1)
        names += [f"bytes:{o}" for o in ops]
    return out, tuple(names)


#: (table, column) cells of the history store a mutation may overwrite (every column the readers convert)
HISTORY_CELLS: tuple[tuple[str, str], ...] = (
    ("runs", "run_key"),
    ("runs", "kernel"),
    ("runs", "source"),
    ("runs", "recorded_at"),
    ("runs", "recorded_at_origin"),
    ("runs", "added_at"),
    ("runs", "provenance_json"),
    ("runs", "notes_json"),
    ("configs", "func_key"),
    ("configs", "params"),
    ("configs", "backend"),
    ("configs", "phase"),
    ("configs", "nodeid"),
    ("configs", "median_ms"),
    ("configs", "nrep"),
    ("configs", "rel_std_pct"),
    ("configs", "samples_json"),
    ("configs", "launches_per_call"),
    ("configs", "kernel_name"),
    ("configs", "capture_source"),
    ("configs", "capture_check"),
)
#: SQL literals of every storage class, the numeric edges and malformed JSON text
CELL_VALUES: tuple[tuple[str, str], ...] = (
    ("null", "NULL"),
    ("text", "'abc'"),
    ("date_text", "'yesterday'"),
    ("blob", "X'01'"),
    ("empty_blob", "X''"),
    ("int_neg", "-5"),
    ("int_max", "9223372036854775807"),
    ("real_huge", "9e18"),
    ("real_max", "1e308"),
    ("real_neg", "-1.0"),
    ("zero", "0"),
    ("json_list_text", "'[1, \"x\"]'"),
    ("json_bad", "'{'"),
    ("json_deep", "'" + "[" * 3000 + "]" * 3000 + "'"),
    ("json_nan", "'[NaN]'"),
    ("json_obj", "'{\"a\": 1}'"),
)


def mutate_history_cells(data: bytes, seed: int) -> tuple[bytes, tuple[str, ...]]:
    """Overwrite 1-2 cells of a history store (SQLite bytes) with values of the wrong type or range."""
    import os
    import sqlite3
    import tempfile

    rng = random.Random(seed)
    names = []
    fd, tmp = tempfile.mkstemp(suffix=".sqlite")
    try:
        os.write(fd, data)
        os.close(fd)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA ignore_check_constraints = ON")  # a tampered file need not obey the schema
            for _ in range(rng.randint(1, 2)):
                table, column = rng.choice(HISTORY_CELLS)
                vname, literal = rng.choice(CELL_VALUES)
                rowids = [r[0] for r in conn.execute(f"SELECT rowid FROM {table}")]
                if not rowids:
                    continue
                with_rowid = rng.choice(rowids)
                try:
                    conn.execute(f"UPDATE {table} SET {column} = {literal} WHERE rowid = ?", (with_rowid,))
                except sqlite3.Error:  # NOT NULL / PRIMARY KEY: the store's own schema refuses the edit
                    continue
                names.append(f"cell:{table}.{column}={vname}")
        finally:
            conn.close()
        with open(tmp, "rb") as fh:
            out = fh.read()
    finally:
        os.unlink(tmp)
    return out, tuple(names) or ("cell:none",)
