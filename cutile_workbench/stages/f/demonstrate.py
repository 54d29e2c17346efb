"""F's wrapper-level fix, demonstrated in a throwaway copy: the edit and the report section (pure core).

Seed F allows a wrapper-only fix "in the throwaway checkout" when the caller explicitly authorizes
it, and the verdict stays FIXABLE (the permanent fix belongs to Agent B / reflection). This module
holds the two pure halves of that demonstration; the service (:mod:`cutile_workbench.services.demonstrate`)
builds the overlay, runs the configs and fills :class:`Demonstration`.

Contract:
- :func:`add_config_edit` writes the reference's config into the candidate's config function, in
  the candidate's own spelling: when the function returns one list literal, a new first element
  shaped like the list's first element (``SimpleNamespace(BM=…, …)`` / ``dict(…)`` / ``{…}``);
  otherwise a rebinding of the function at the end of the module that prepends the config to what
  the original returns (the function is looked up at call time, so both take effect). Knobs the
  candidate's configs carry but the reference config does not set are filled from
  :data:`UNSET_KNOB_DEFAULTS` (cuTile's own defaults) and listed in :attr:`WrapperEdit.filled`; a
  knob with no default refuses the edit (:class:`EditRefused`), never a guess.
- :func:`render_demonstration` is the ``## Demonstrated in a throwaway copy`` section of the F
  reports: status, the change as a unified diff, per config the before / after / reference medians
  and ratios with 95% CIs, the launch evidence of the re-run, where the overlay and its log are,
  and the TileGym tree's hash before and after (unchanged, or the section says so).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cutile_workbench.evidence.search_space import AUTO, ConfigSpace, TuneConfig

#: value of a knob the reference config leaves unset (what cuTile uses when a kernel sets none)
UNSET_KNOB_DEFAULTS: Mapping[str, Any] = {"num_ctas": 1, "occupancy": 1}
DemoStatus = Literal["done", "failed", "timed_out", "not_applicable"]


class EditRefused(Exception):
    """The edit cannot be written without guessing (a knob with no value, an unreadable function)."""


@dataclass(frozen=True)
class WrapperEdit:
    """One wrapper-level change in the throwaway copy."""

    kind: Literal["add_config", "replace_alloc", "remove_canary", "route_fallback"]
    variant: str | None
    relpath: str  # inside the TileGym tree, e.g. src/tilegym/ops/cutile_rs/matmul.py
    function: str
    config: str  # the added config as the candidate spells it
    reference_config: str  # the reference config it stands for (canonical knobs)
    reference_source: str  # where that config came from (analysis.json best_config, ...)
    filled: tuple[
        str, ...
    ]  # knobs filled with a default: "NUM_CTAS=1 (cuTile's default; the reference sets none)"
    before: str
    after: str
    #: configs whose evidence named this edit (line edits: the rows of the investigation), re-run too
    params: tuple[str, ...] = ()

    @property
    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.before.splitlines(keepends=True),
                self.after.splitlines(keepends=True),
                f"a/{self.relpath}",
                f"b/{self.relpath}",
            )
        )


@dataclass
class EditBatch:
    """Edits tried one after another, each on the text its file has after the edits before it: an
    edit that cannot be written without guessing (:class:`EditRefused`) or a wrapper that cannot be
    read or parsed becomes a note naming it, and the rest go on. The one loop of the config edits
    (:mod:`cutile_workbench.services.demonstrate`) and the line edits (:mod:`cutile_workbench.stages.f.actions`)."""

    read: Callable[[str], str]  # relpath -> the file's text (before any edit)
    edits: list[WrapperEdit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)  # relpath -> its text after the edits so far

    def attempt(
        self,
        label: str,
        relpath: str,
        make: Callable[[str], WrapperEdit],
        *,
        unreadable: str = "cannot read the wrapper",
        refused: str = "not applied",
    ) -> None:
        """``make(text)`` on ``relpath``'s current text; its edit kept, or a ``label: why`` note."""
        try:
            text = self.texts[relpath] if relpath in self.texts else self.read(relpath)
            edit = make(text)
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            self.notes.append(f"{label}: {unreadable}: {exc}")
            return
        except EditRefused as exc:
            self.notes.append(f"{label}: {refused}: {exc}")
            return
        self.texts[relpath] = edit.after
        self.edits.append(edit)


@dataclass(frozen=True)
class ConfigOutcome:
    """One re-run config: the kernel dir's numbers (before), the overlay's (after), the reference's."""

    params: str
    reference_backend: str
    before_ms: float | None
    after_ms: float | None
    reference_ms: float | None
    before_ci: tuple[float, float] | None = None  # of before/reference
    after_ci: tuple[float, float] | None = None  # of after/reference
    after_launches: int | None = None
    after_kernel: str | None = None
    after_resources: str = ""  # "grid (132,1,1) block (256,1,1) regs 255 smem 196760 B"
    reference_resources: str = ""

    @property
    def before_ratio(self) -> float | None:
        return self.before_ms / self.reference_ms if self.before_ms and self.reference_ms else None

    @property
    def after_ratio(self) -> float | None:
        return self.after_ms / self.reference_ms if self.after_ms and self.reference_ms else None


@dataclass(frozen=True)
class Demonstration:
    """What ``report f --demonstrate`` did (module contract); rendered into the F reports."""

    status: DemoStatus
    reason: str
    edits: tuple[WrapperEdit, ...] = ()
    outcomes: tuple[ConfigOutcome, ...] = ()
    overlay: str = ""  # kernel-dir-relative
    kept: bool = False
    run_log: str = ""  # kernel-dir-relative log of the re-run
    tilegym: str = ""
    tree_sha256_before: str = ""
    tree_sha256_after: str = ""
    command: str = ""
    duration_s: float | None = None

    @property
    def configs(self) -> tuple[str, ...]:
        return tuple(o.params for o in self.outcomes)


# --------------------------------------------------------------------------- the edit


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise EditRefused(f"function {name}() not found at the module's top level")


def _filled_config(space: ConfigSpace, config: TuneConfig) -> tuple[list[tuple[str, Any]], list[str]]:
    """(source name → value in the space's order, filled-knob notes) for every knob the space spells."""
    mine = dict(config.knobs)
    items: list[tuple[str, Any]] = []
    filled: list[str] = []
    for knob, name in space.spelling.items():
        if knob in mine and mine[knob] != AUTO:
            items.append((name, mine[knob]))
        elif knob in UNSET_KNOB_DEFAULTS:
            items.append((name, UNSET_KNOB_DEFAULTS[knob]))
            filled.append(
                f"{name}={UNSET_KNOB_DEFAULTS[knob]} (cuTile's default: the reference config sets no {knob})"
            )
        else:
            raise EditRefused(
                f"the candidate's configs set {name} ({knob}) but the reference config "
                f"({config.label}) does not, and it has no default"
            )
    # a knob the configs do not carry is fine when the wrapper's module constant already has the
    # reference's value (``_GROUP_SIZE_M = 8``), as compare_spaces judges it
    unknown = [
        k for k in mine if k not in space.spelling and mine[k] != AUTO and space.constants.get(k) != mine[k]
    ]
    if unknown:
        raise EditRefused(
            f"the candidate's configs cannot express {', '.join(unknown)} of the reference config "
            f"({config.label}): a kernel change, not a wrapper edit"
        )
    return items, filled


def _element_text(first: ast.expr, items: Sequence[tuple[str, Any]]) -> str:
    """A new list element shaped like ``first`` (the list's own first element)."""
    if isinstance(first, ast.Call) and not first.args:
        fn = ast.unparse(first.func)
        return f"{fn}(" + ", ".join(f"{k}={v!r}" for k, v in items) + ")"
    if isinstance(first, ast.Dict):
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in items) + "}"
    raise EditRefused(f"the config list's elements are {type(first).__name__}, not a call or a dict literal")


def add_config_edit(
    source: str, relpath: str, space: ConfigSpace, config: TuneConfig, *, reference_source: str
) -> WrapperEdit:
    """The edit that adds ``config`` to ``space``'s function (module contract)."""
    if not space.function:
        raise EditRefused(f"{space.origin}: the config space has no function to edit")
    tree = ast.parse(source)
    fn = _function(tree, space.function)
    items, filled = _filled_config(space, config)
    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return)]
    lines = source.splitlines(keepends=True)
    after: str
    if len(returns) == 1 and isinstance(returns[0].value, ast.List) and returns[0].value.elts:
        first = returns[0].value.elts[0]
        text = added = _element_text(first, items)
        line = lines[first.lineno - 1]
        if first.lineno != returns[0].value.lineno:  # one element per line: a line of its own, same indent
            indent = line[: len(line) - len(line.lstrip())]
            new = f"{indent}{text},  # added by cutile-workbench (the reference's config)\n"
            after = "".join(lines[: first.lineno - 1]) + new + "".join(lines[first.lineno - 1 :])
        else:
            col = first.col_offset
            after = (
                "".join(lines[: first.lineno - 1])
                + line[:col]
                + text
                + ", "
                + line[col:]
                + "".join(lines[first.lineno :])
            )
    else:
        shaped = (
            _element_text(returns[0].value.elts[0], items)
            if (returns and isinstance(returns[0].value, ast.List) and returns[0].value.elts)
            else ("SimpleNamespace(" + ", ".join(f"{k}={v!r}" for k, v in items) + ")")
        )
        name, added = space.function, shaped
        after = source.rstrip("\n") + (
            f"\n\n\n# added by cutile-workbench: the reference's config first, then {name}()'s own\n"
            f"_wb_original_{name} = {name}\n\n\n"
            f"def {name}(*args, **kwargs):\n"
            f"    return [{shaped}, *_wb_original_{name}(*args, **kwargs)]\n"
        )
    try:
        compile(after, relpath, "exec")
    except SyntaxError as exc:  # never hand a broken file to the run
        raise EditRefused(f"the edited {relpath} does not compile: {exc}") from None
    return WrapperEdit(
        "add_config",
        space.variant,
        relpath,
        space.function,
        added,
        config.label,
        reference_source,
        tuple(filled),
        source,
        after,
    )


# --------------------------------------------------------------------------- the section


def _us(ms: float | None) -> str:
    return "—" if ms is None else f"{ms * 1000:.2f}"


def _ratio(r: float | None, ci: tuple[float, float] | None) -> str:
    if r is None:
        return "—"
    return f"{r:.3f}x" + (f" [{ci[0]:.3f}–{ci[1]:.3f}]" if ci else "")


def render_demonstration(demo: Demonstration, scope_configs: Sequence[str] | None = None) -> str:
    """``## Demonstrated in a throwaway copy`` (module contract); ``scope_configs`` narrows the table."""
    out = ["## Demonstrated in a throwaway copy", ""]
    if demo.status == "not_applicable":
        out += [f"Not demonstrated: {demo.reason}", ""]
        return "\n".join(out)
    head = {
        "done": "Re-ran the slow configs of the candidate with the wrapper edit below, in a throwaway copy of "
        "the TileGym tree (workbench harness).",
        "failed": f"The demonstration FAILED: {demo.reason}",
        "timed_out": f"The demonstration TIMED OUT: {demo.reason}",
    }[demo.status]
    out += [
        head,
        "",
        "The verdict stays FIXABLE: this is evidence for Agent B / reflection, not the fix itself. "
        "The real TileGym tree and the kernel dir's measured logs were not modified.",
        "",
    ]
    for e in demo.edits:
        what = {
            "add_config": f"Adds the reference's config ({e.reference_config}; {e.reference_source}) as `{e.config}`.",
            "replace_alloc": f"Replaces the hot-path allocation `{e.reference_config}` with `{e.config}` ({e.reference_source}).",
            "remove_canary": f"Removes the per-call canary launch `{e.reference_config}` ({e.reference_source}).",
            "route_fallback": f"Routes the fallback `{e.reference_config}` back to the FFI kernel ({e.reference_source}).",
        }[e.kind]
        out += [
            f"### Change ({e.kind}): {e.relpath} `{e.function}()` (variant {e.variant or '(single)'})",
            "",
            what,
        ]
        out += [f"- filled: {f}" for f in e.filled]
        out += ["", "```diff", e.diff.rstrip("\n"), "```", ""]
    rows = [o for o in demo.outcomes if scope_configs is None or o.params in scope_configs]
    if rows:
        out += [
            "### Before / after (medians, us; ratio = candidate / reference, 95% bootstrap CI)",
            "",
            "Before and reference are the kernel dir's measured logs; after is this re-run (another process, "
            "possibly another day: read small differences against the run-to-run noise).",
            "",
            "| Config | reference | reference (us) | before (us) | before ratio | after (us) | after ratio | "
            "launches/call after | kernel after |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for o in rows:
            out.append(
                f"| {o.params} | {o.reference_backend} | {_us(o.reference_ms)} | {_us(o.before_ms)} | "
                f"{_ratio(o.before_ratio, o.before_ci)} | {_us(o.after_ms)} | {_ratio(o.after_ratio, o.after_ci)} "
                f"| {o.after_launches if o.after_launches is not None else '—'} | {o.after_kernel or '—'} |"
            )
        res = [o for o in rows if o.after_resources or o.reference_resources]
        if res:
            out += ["", "Launch evidence of the re-run (candidate after / reference):", ""]
            out += [
                f"- {o.params}: {o.after_resources or 'not captured'} / {o.reference_resources or 'not captured'}"
                for o in res
            ]
        out.append("")
    out.append(f"- overlay: {demo.overlay} ({'kept' if demo.kept else 'removed after the run'})")
    if demo.run_log:
        out.append(f"- run log: {demo.run_log}")
    if demo.command:
        out.append(f"- command: `{demo.command}`")
    if demo.duration_s is not None:
        out.append(f"- duration: {demo.duration_s:.0f} s")
    same = demo.tree_sha256_before == demo.tree_sha256_after
    out.append(
        f"- TileGym tree {demo.tilegym}: sha256 {demo.tree_sha256_before[:16]}… before, "
        + ("unchanged after" if same else f"CHANGED after ({demo.tree_sha256_after[:16]}…)")
    )
    out.append("")
    return "\n".join(out)
