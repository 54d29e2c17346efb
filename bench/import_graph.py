"""Import-graph figures of a tree (issue 21's before/after): modules, edges, levels, folder graph, one chain.

Usage (from a checkout's root, with that checkout first on the path)::

    PYTHONPATH=$PWD python bench/import_graph.py --packages cutile_workbench \
        --chain cutile_workbench.cli.stage_f cutile_workbench.artifacts.layout --out FILE.json
    # the old layout: --packages workbench widgets profiles --chain workbench.cli.stage_f workbench.layout
    # both: --exclude <profiles' sub-modules> (GPU suites + assembly scripts run in a child / by hand)

Figures (grimp, the graph import-linter checks; imports inside functions count, as for the contracts):
- ``modules`` / ``edges``: modules of the packages and direct imports between them;
- ``levels``: the longest import path in the module graph, in modules (a DAG: the acyclic contract holds);
- ``groups``: the top-level folders and loose modules (``stages.e`` / ``stages.f`` / ``tui.widgets``
  counted apart), their edges and levels (longest path over the condensed group graph);
- ``chain``: the longest import path from the ``report f`` command module to the module that spells
  the artifact file names — the hops a kernel name travels from the command line to the files read.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import grimp


def group_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "cutile_workbench":
        return ".".join(parts[:2]) if parts[0] == "workbench" and len(parts) > 1 else parts[0]
    if len(parts) > 2 and parts[1] == "stages":
        return ".".join(parts[:3])
    if len(parts) > 2 and parts[1] == "tui" and parts[2] == "widgets":
        return "cutile_workbench.tui.widgets"
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def longest_path(nodes: set[str], succ: dict[str, set[str]]) -> list[str]:
    """Longest simple path in a DAG (nodes on a cycle are condensed by the caller or absent)."""

    @functools.cache
    def best(n: str) -> tuple[str, ...]:
        tails = [best(m) for m in succ.get(n, ()) if m != n]
        return (n, *max(tails, key=lambda p: len(p), default=()))

    sys.setrecursionlimit(10_000)
    longest: tuple[str, ...] = ()
    for n in sorted(nodes):
        path: tuple[str, ...] = best(n)
        if len(path) > len(longest):  # the first of the longest, in name order: deterministic
            longest = path
    return list(longest)


def condense(nodes: set[str], succ: dict[str, set[str]]) -> tuple[set[str], dict[str, set[str]]]:
    """Strongly connected components as single nodes (Tarjan), so levels are defined with cycles too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comp: dict[str, str] = {}
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on.discard(w)
                members.append(w)
                if w == v:
                    break
            name = " | ".join(sorted(members))
            for w in members:
                comp[w] = name

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    cnodes = set(comp.values())
    csucc: dict[str, set[str]] = {c: set() for c in cnodes}
    for v, ws in succ.items():
        for w in ws:
            if comp[v] != comp[w]:
                csucc[comp[v]].add(comp[w])
    return cnodes, csucc


def measure(
    packages: list[str], chain: tuple[str, str] | None, exclude: tuple[str, ...] = ()
) -> dict[str, object]:
    graph = grimp.build_graph(*packages)
    mods = {m for m in graph.modules if m.split(".")[0] in packages and not m.startswith(exclude)}
    succ = {m: {d for d in graph.find_modules_directly_imported_by(m) if d in mods} for m in mods}
    edges = sum(len(v) for v in succ.values())
    cnodes, csucc = condense(mods, succ)
    mod_path = longest_path(cnodes, csucc)
    gsucc: dict[str, set[str]] = {}
    for m, ds in succ.items():
        gm = group_of(m)
        gsucc.setdefault(gm, set())
        for d in ds:
            gd = group_of(d)
            if gd != gm and not gd.startswith(gm + ".") and not gm.startswith(gd + "."):
                gsucc[gm].add(gd)
    gnodes = set(gsucc)
    gc_nodes, gc_succ = condense(gnodes, gsucc)
    out: dict[str, object] = {
        "packages": packages,
        "excluded": list(exclude),
        "modules": len(mods),
        "edges": edges,
        "levels": len(mod_path),
        "longest_module_path": mod_path,
        "groups": len(gnodes),
        "group_edges": sum(len(v) for v in gsucc.values()),
        "group_levels": len(longest_path(gc_nodes, gc_succ)),
        "group_cycles": sorted(c for c in gc_nodes if " | " in c),
    }
    if chain:
        src, dst = chain
        # longest path src → dst in the condensed module DAG
        target = next(c for c in cnodes if dst in c.split(" | "))
        start = next(c for c in cnodes if src in c.split(" | "))

        @functools.cache
        def best_to(n: str) -> tuple[str, ...] | None:
            if n == target:
                return (n,)
            tails = [t for t in (best_to(m) for m in sorted(csucc.get(n, ()))) if t is not None]
            return (n, *max(tails, key=lambda p: len(p))) if tails else None

        path = best_to(start)
        out["chain"] = {
            "from": src,
            "to": dst,
            "hops": (len(path) - 1) if path else None,
            "path": list(path or ()),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packages", nargs="+", required=True)
    ap.add_argument("--chain", nargs=2, metavar=("FROM", "TO"))
    ap.add_argument(
        "--exclude",
        nargs="*",
        default=[],
        help="module prefixes left out (the profiles' GPU suites and assembly scripts: no layer of the app)",
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = measure(args.packages, tuple(args.chain) if args.chain else None, tuple(args.exclude))
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
