"""One config naming for every face (issue 30 item 3): any unambiguous spelling names one config.

Contract of :meth:`ConfigNames.resolve` (every command that takes ``--config`` calls it through the
session): a spelling resolves to the config's params string when it is

1. a config's full params string (``True-False-False-False-2048-2048-2048-0-0-torch.float16``);
2. the TUI's label of it (:func:`cutile_workbench.model.config_labels`: the fields that vary, e.g.
   ``True-False-False-False``, or ``True-2048-2048-2048`` when the shapes vary too);
3. a node id of one of its tests, with or without the test file (``tests/ops/test_x.py::T::test_perf[…]``,
   ``test_perf[cutile_rs-…]``), any backend's, or ``<func_key>[<params>]``;

in that order (a full params string wins over a label that happens to spell it). A spelling that names
no config is an ``InputError`` (key ``--config``) listing the close matches; one that names several
(a label or a node id that two configs share) lists them all. Never a guess.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cutile_workbench.artifacts.testids import natural_key, split_nodeid
from cutile_workbench.errors import InputError
from cutile_workbench.model import config_labels


@dataclass(frozen=True)
class ConfigNames:
    """The configs of one kernel dir (params strings, natural order) and the names each goes by."""

    params: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)  # params → the TUI's label
    nodeids: dict[str, frozenset[str]] = field(default_factory=dict)  # node id → params it names

    def label(self, params: str) -> str:
        return self.labels.get(params, params)

    def lookup(self, spelling: str) -> list[str]:
        """Every config ``spelling`` names, by the module contract's order ([] = none, 2+ = ambiguous)."""
        text = spelling.strip()
        if text in self.params:
            return [text]
        by_label = sorted({p for p, lab in self.labels.items() if lab == text}, key=natural_key)
        if len(by_label) == 1:
            return by_label
        named = set(self.nodeids.get(text, ()))
        if not named and "[" in text:
            short = text.rsplit("::", 1)[-1]  # the test function and its id, without the file
            named = {p for n, ps in self.nodeids.items() if n.rsplit("::", 1)[-1] == short for p in ps}
            if not named:
                _func, _token, params = split_nodeid(text)
                inner = text[text.index("[") + 1 : text.rindex("]")] if text.endswith("]") else ""
                named = {p for p in (params, inner) if p in self.params}
        return sorted(named | set(by_label), key=natural_key)

    def resolve(self, spelling: str, *, path: str | Path | None = None, key: str = "--config") -> str:
        """The params string ``spelling`` names (module contract); InputError otherwise."""
        text = spelling.strip()
        candidates = self.lookup(text)
        if len(candidates) == 1:
            return candidates[0]
        if len(candidates) > 1:
            raise InputError(
                f"config {spelling!r} is ambiguous: it names {len(candidates)} configs: "
                + ", ".join(self._spelled(p) for p in candidates),
                path=str(path) if path is not None else None,
                key=key,
            )
        raise InputError(
            f"unknown config {spelling!r}" + self._close(text) + f" ({len(self.params)} configs recorded)",
            path=str(path) if path is not None else None,
            key=key,
        )

    def _spelled(self, params: str) -> str:
        label = self.labels.get(params)
        return f"{params} (label {label})" if label and label != params else params

    def _close(self, text: str) -> str:
        names = {p: p for p in self.params}
        names.update({lab: p for p, lab in self.labels.items() if lab not in names})
        close = difflib.get_close_matches(text, list(names), n=6, cutoff=0.4)
        close += [n for n in names if text and text in n and n not in close][: max(0, 6 - len(close))]
        picked = list(dict.fromkeys(names[c] for c in close))
        return f"; close matches: {', '.join(self._spelled(p) for p in picked)}" if picked else ""


def config_names(entries: Iterable[tuple[str, str]], labelled: Iterable[str] | None = None) -> ConfigNames:
    """:class:`ConfigNames` of ``(params, node id)`` pairs (node id "" = none known; params "" dropped);
    ``labelled``: the configs the TUI labels (E's table rows; default: all of them), so that a label
    means here what it means on the Ratios screen."""
    nodeids: dict[str, set[str]] = {}
    seen: dict[str, None] = {}
    for params, nodeid in entries:
        if not params:
            continue
        seen.setdefault(params, None)
        if nodeid:
            nodeids.setdefault(nodeid, set()).add(params)
    ordered = tuple(sorted(seen, key=natural_key))
    shown = list(labelled) if labelled is not None else list(ordered)
    return ConfigNames(ordered, config_labels(shown), {n: frozenset(ps) for n, ps in nodeids.items()})
