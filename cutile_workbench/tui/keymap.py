"""User keymap: remap any of the workbench's key bindings by id from a TOML file.

Contract:
- Where: ``--keymap FILE``, else ``$CUTILE_WORKBENCH_KEYMAP``, else
  ``~/.config/cutile-workbench/keymap.toml`` when it exists (:func:`keymap_path`). An explicit
  file (flag or variable) that is missing is a problem; a missing default file is not.
- Format: a ``[keymap]`` table of ``binding-id = "key[,key]"`` (Textual key names: ``ctrl+t``,
  ``f2``, ``question_mark`` or ``?``, ``shift+tab``). Binding ids are the ``id=`` of every
  ``Binding`` (F1 shows the keys in effect; :func:`cutile_workbench.tui.catalog.known_bindings` lists
  them all). This module is a leaf: it imports no part of the TUI (its callers pass ``known``) and
  reads the file through :mod:`cutile_workbench.services.userfiles`.
- :func:`load_keymap` never raises for a bad file: a file that is not regular or over
  :data:`MAX_KEYMAP_BYTES`, malformed or too deeply nested TOML (with its line), a non-string
  value, an unknown binding id, an invalid key and any entry that would take ``ctrl+q`` from quit
  each become an :class:`~cutile_workbench.errors.InputError` naming the file, line and key in
  :attr:`LoadedKeymap.problems` (the app shows :meth:`LoadedKeymap.notifications`: the first
  :data:`MAX_NOTIFICATIONS`, then a count); every valid entry is still applied. Loading is linear in
  the file size (one pass finds every key's line).
- ``ctrl+q`` always quits: remapping ``app-quit`` adds keys but keeps ``ctrl+q``
  (:data:`QUIT_KEY`), and no other binding may take ``ctrl+q`` (Textual's keymap would delete
  the app's ``ctrl+q`` entry, Textual's own quit included, for a clashing id).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from cutile_workbench.errors import InputError

_toml: ModuleType | None
try:  # the standard library from 3.11; the package supports 3.10, where tomli is the same parser
    import tomllib as _toml
except ImportError:  # pragma: no cover - Python 3.10 only
    try:
        import tomli as _toml  # type: ignore[no-redef, unused-ignore]
    except ImportError:
        _toml = None

ENV_VAR = "CUTILE_WORKBENCH_KEYMAP"
DEFAULT_PATH = Path("~/.config/cutile-workbench/keymap.toml")
QUIT_ID = "app-quit"
QUIT_KEY = "ctrl+q"
#: a keymap is a few dozen lines; a bigger file is refused unread (the loader stays linear below it)
MAX_KEYMAP_BYTES = 1024 * 1024
#: "did you mean" hints for the first unknown ids only (difflib per id would make a huge file slow)
MAX_HINTS = 50
#: notifications the app shows at start-up; the rest are summed up in one more
MAX_NOTIFICATIONS = 12
TABLE = "keymap"
MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


@dataclass(frozen=True)
class BindingInfo:
    """One remappable binding: where it is declared and its default keys (for help and errors)."""

    binding_id: str
    keys: str
    action: str
    description: str
    owner: str  # the class that declares it, e.g. ``RatiosScreen``


#: the binding ids a keymap may name: a mapping, or a function that returns one (called when needed)
Known = Mapping[str, BindingInfo] | Callable[[], Mapping[str, BindingInfo]]


@dataclass(frozen=True)
class LoadedKeymap:
    """The valid entries (binding id → normalized keys, ready for ``App.set_keymap``) and the problems."""

    path: Path | None = None
    bindings: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[InputError, ...] = ()

    def notifications(self, limit: int = MAX_NOTIFICATIONS) -> tuple[InputError, ...]:
        """The problems the app shows at start-up: the first ``limit``, then one naming how many more."""
        if len(self.problems) <= limit:
            return self.problems
        more = len(self.problems) - (limit - 1)
        return (
            *self.problems[: limit - 1],
            _problem(
                f"{more} more keymap problems not shown (fix the ones above first)", self.path or Path()
            ),
        )


def keymap_path(
    explicit: Path | str | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Path, bool]:
    """The keymap file to read and whether the user named it (then it must exist)."""
    env = os.environ if environ is None else environ
    if explicit:
        return Path(explicit).expanduser(), True
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR]).expanduser(), True
    home = env.get("HOME")
    default = Path(home) / ".config/cutile-workbench/keymap.toml" if home else DEFAULT_PATH.expanduser()
    return default, False


def load_keymap(
    explicit: Path | str | None = None,
    *,
    known: Known,
    environ: Mapping[str, str] | None = None,
) -> LoadedKeymap:
    """Find, read and validate the user's keymap (see the module contract) against the binding ids
    ``known`` (a mapping, or a function returning one: called only when there is a file to check;
    the TUI passes :func:`cutile_workbench.tui.catalog.known_bindings`). Never raises."""
    from cutile_workbench.services.userfiles import read_regular_text

    path, named = keymap_path(explicit, environ)
    if not (path.exists() or path.is_symlink()):
        if named:
            return LoadedKeymap(path, {}, (_problem("keymap file not found", path),))
        return LoadedKeymap(None)
    try:  # a FIFO, device or directory is refused unread, a file over MAX_KEYMAP_BYTES too
        text = read_regular_text(path, kind="keymap file", cap=MAX_KEYMAP_BYTES)
    except InputError as exc:
        return LoadedKeymap(path, {}, (_problem(exc.message, path, exc.line),))
    return parse_keymap(text, path, known() if callable(known) else known)


def parse_keymap(text: str, path: Path, known: Mapping[str, BindingInfo]) -> LoadedKeymap:
    """Validate the TOML text of a keymap file against the ``known`` binding ids."""
    if _toml is None:  # pragma: no cover - Python 3.10 without tomli
        return LoadedKeymap(
            path, {}, (_problem("reading TOML needs Python 3.11+ or the tomli package", path),)
        )
    try:
        doc = _toml.loads(text)
    except _toml.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _lineno_from_message(str(exc))
        return LoadedKeymap(path, {}, (_problem(f"malformed TOML: {exc}", path, line),))
    except RecursionError:  # thousands of nested brackets: tomllib recurses per level
        return LoadedKeymap(path, {}, (_problem("malformed TOML: nested too deeply", path),))
    except ValueError as exc:  # CPython's 4300-digit integer guard is a plain ValueError
        return LoadedKeymap(path, {}, (_problem(f"malformed TOML: {exc}", path),))
    lines = _LineIndex(text)  # one pass: looking a key's line up per entry made a big file quadratic
    hints_left = MAX_HINTS
    problems: list[InputError] = []
    for name in doc:
        if name != TABLE:
            problems.append(
                _problem(
                    f"unknown top-level key (the file holds one [{TABLE}] table)",
                    path,
                    lines.line_of(name, None),
                    name,
                )
            )
    table = doc.get(TABLE, {})
    if not isinstance(table, dict):
        return LoadedKeymap(
            path,
            {},
            (
                *problems,
                _problem(f"'{TABLE}' must be a table: [{TABLE}]", path, lines.line_of(TABLE, None), TABLE),
            ),
        )
    if not table and TABLE not in doc:
        problems.append(_problem(f"no [{TABLE}] table: nothing remapped", path))
    accepted: dict[str, str] = {}
    for binding_id, value in table.items():
        line = lines.line_of(binding_id, TABLE)
        if binding_id not in known:
            hint = _closest(binding_id, known) if hints_left > 0 else None  # difflib per id is not cheap
            hints_left -= 1
            problems.append(
                _problem(
                    "unknown binding id"
                    + (f" (did you mean '{hint}'?)" if hint else "")
                    + "; F1 lists the keys of each screen",
                    path,
                    line,
                    binding_id,
                )
            )
            continue
        if not isinstance(value, str):
            problems.append(
                _problem(
                    f'the keys must be a string such as "ctrl+t" or "f2,t", not {type(value).__name__}',
                    path,
                    line,
                    binding_id,
                )
            )
            continue
        keys, errors = normalize_keys(value)
        for error in errors:
            problems.append(_problem(error, path, line, binding_id))
        if binding_id == QUIT_ID:
            if QUIT_KEY not in keys:
                keys.append(QUIT_KEY)  # adding keys to quit is fine; ctrl+q stays
        elif QUIT_KEY in keys:
            problems.append(
                _problem(f"{QUIT_KEY} is reserved for quit and cannot be remapped", path, line, binding_id)
            )
            keys = [k for k in keys if k != QUIT_KEY]
        if keys:
            accepted[binding_id] = ",".join(keys)
    problems += _stolen_keys(lines, path, accepted, known)
    return LoadedKeymap(path, accepted, tuple(problems))


def _stolen_keys(
    lines: _LineIndex, path: Path, accepted: Mapping[str, str], known: Mapping[str, BindingInfo]
) -> list[InputError]:
    """Warn when a remapped key replaces another binding of the same screen/widget (it is applied:
    Textual drops the other binding's use of that key, which is rarely what the user wants)."""
    from textual.keys import _normalize_key_list

    effective = {
        bid: (accepted.get(bid) or _normalize_key_list(info.keys)).split(",") for bid, info in known.items()
    }
    out: list[InputError] = []
    for bid, keys in accepted.items():
        owner = known[bid].owner
        for other, info in known.items():
            if other == bid or info.owner != owner:
                continue
            for key in set(keys.split(",")) & set(effective[other]):
                out.append(
                    _problem(
                        f"'{key}' is also a key of '{other}' on {owner}, which loses it "
                        f"(applied; rebind '{other}' too to keep both)",
                        path,
                        lines.line_of(bid, TABLE),
                        bid,
                    )
                )
    return out


def normalize_keys(value: str) -> tuple[list[str], list[str]]:
    """Split ``"key[,key]"`` into Textual key names; return (valid keys, one error per invalid key)."""
    from textual.keys import _character_to_key

    keys: list[str] = []
    errors: list[str] = []
    parts = [p.strip() for p in value.split(",")]
    if not any(parts):
        return [], ["empty key list: name at least one key"]
    for part in parts:
        if not part:
            errors.append(f"empty key in {value!r} (a comma key is spelled 'comma')")
            continue
        *mods, base = part.split("+")
        mods = [m.lower() for m in mods]
        bad = [m for m in mods if m not in MODIFIERS]
        if not base or bad or len(set(mods)) != len(mods):
            what = f"unknown modifier {bad[0]!r}" if bad else "a key after the modifiers"
            errors.append(f"invalid key {part!r}: {what} (modifiers: {', '.join(MODIFIERS)})")
            continue
        if len(base) == 1:
            if not base.isprintable() or base.isspace():
                errors.append(f"invalid key {part!r}: not a printable character (use e.g. 'space', 'tab')")
                continue
            base = _character_to_key(base)
        elif not _is_key_name(base):
            errors.append(
                f"invalid key {part!r}: {base!r} is not a key name (e.g. f2, escape, tab, "
                "question_mark; `textual keys` shows what your terminal sends)"
            )
            continue
        key = "+".join([*[m for m in MODIFIERS if m in mods], base])
        if key.lower() == QUIT_KEY:
            key = QUIT_KEY
        if key not in keys:
            keys.append(key)
    return keys, errors


def _is_key_name(name: str) -> bool:
    from textual.keys import KEY_NAME_REPLACEMENTS, Keys, key_to_character

    if name in _KEY_NAMES:
        return True
    if not _KEY_NAMES:
        _KEY_NAMES.update(k.value.rsplit("+", 1)[-1] for k in Keys)
        _KEY_NAMES.update(KEY_NAME_REPLACEMENTS.values())
        _KEY_NAMES.update({"space", "comma", "full_stop", "minus", "plus", "underscore", "newline"})
        if name in _KEY_NAMES:
            return True
    if key_to_character(name) is not None:  # a Unicode character name: question_mark, asterisk, ...
        return True
    return name.startswith("upper_") and len(name) == 7 and name[-1].isalpha()


_KEY_NAMES: set[str] = set()


def _problem(message: str, path: Path, line: int | None = None, key: str | None = None) -> InputError:
    return InputError(message, path=path, line=line, key=key, title="Keymap")


def _lineno_from_message(message: str) -> int | None:
    m = re.search(r"at line (\d+)", message)
    return int(m.group(1)) if m else None


class _LineIndex:
    """The line of each ``key =`` per table (and of each ``[table]`` header), built in one pass over the
    text (tomllib keeps no positions); the first assignment of a key wins, as before."""

    _HEADER = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
    _ASSIGN = re.compile(r"""^\s*(?:"([^"]*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*=""")

    def __init__(self, text: str) -> None:
        self._lines: dict[tuple[str | None, str], int] = {}
        current: str | None = None
        for number, line in enumerate(text.splitlines(), 1):
            h = self._HEADER.match(line)
            if h:
                current = h.group(1).strip("\"'")
                self._lines.setdefault((None, current), number)  # a table header, looked up with table=None
                continue
            a = self._ASSIGN.match(line)
            if a:
                key = next(g for g in a.groups() if g is not None)
                self._lines.setdefault((current, key), number)

    def line_of(self, key: str, table: str | None) -> int | None:
        """The line that assigns ``key`` (inside ``[table]`` when given; else at top level or its header)."""
        return self._lines.get((table, key))


def _closest(name: str, known: Mapping[str, BindingInfo]) -> str | None:
    import difflib

    hits = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return hits[0] if hits else None


def describe_bindings(known: Mapping[str, BindingInfo]) -> str:
    """Every binding id with its default keys, owner and description (a keymap file's vocabulary)."""
    rows = sorted(known.values(), key=lambda b: (b.owner, b.binding_id))
    width = max((len(b.binding_id) for b in rows), default=0)
    lines = [f'# {len(rows)} binding ids: put `id = "key[,key]"` lines under [{TABLE}] in {DEFAULT_PATH}']
    lines += [f"{b.binding_id:<{width}}  {b.keys:<24}  {b.owner}: {b.description or b.action}" for b in rows]
    return "\n".join(lines) + "\n"
