"""``report f --demonstrate`` as a service: F's wrapper-level fix tried in a throwaway copy.

Contract:
- :func:`plan_edits` derives the wrapper edits from F's evidence (:class:`~cutile_workbench.stages.f.finputs.FInputs`):
  for each variant with slow rows (ratio > 1.05), when the reference's config is known and absent
  from the candidate's search space, add it to the candidate's config function in the candidate's
  spelling (:func:`cutile_workbench.stages.f.demonstrate.add_config_edit`). Anything else is a note saying why
  nothing is tried (unknown reference config, config already present, no TileGym checkout).
- :func:`demonstrate` — the caller's explicit authorization — copies what the run needs of the
  TileGym tree (``src/``, ``tests/``, ``pytest.ini``/``conftest.py``/``pyproject.toml``; build output
  dirs named ``target`` are linked, not copied) into ``<kernel>/workbench/demonstrate/<stamp>/``
  (``workbench/demonstrate`` reached by descriptor, never through a link; the overlay never inside
  the real tree nor the real tree inside it). The copy holds regular files only: a file link in the
  tree is resolved into a copy of its bytes, a dir link (other than ``target``) or a special file is
  refused; the edits are written by the confined atomic write, so no edit can reach the real tree,
  applies the edits there, re-runs only the slow configs of the candidate with the workbench
  harness in that overlay (its own out root inside the overlay: the kernel dir's measured logs are
  never touched), and returns a :class:`~cutile_workbench.stages.f.demonstrate.Demonstration` with before /
  after / reference medians and CIs and the launch evidence of the re-run. The real TileGym tree is
  hashed before and after (``Demonstration.tree_sha256_*``: every regular file's bytes *and* every
  link's target), and a differing hash fails the demonstration. ``--tilegym`` is resolved once. The overlay is removed unless
  ``keep_overlay``; its run log is kept beside it (``<stamp>.log``) either way. A failed or timed-out
  run is a Demonstration with that status and its log, never an exception; bad input (no checkout,
  the read-only recorded session) is an ``InputError``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from cutile_workbench.artifacts.workspace import Workspace
from cutile_workbench.errors import InputError, UnsafePath, WorkbenchError
from cutile_workbench.infra.atomicio import atomic_write_bytes
from cutile_workbench.infra.bootstrap import ratio_ci
from cutile_workbench.infra.paths import dir_at, is_inside
from cutile_workbench.model import LaunchSet, RatioRow
from cutile_workbench.run.results import write_results
from cutile_workbench.run.spec import RunResult, RunSpec
from cutile_workbench.stages.e.stats import DONE_MAX, round4
from cutile_workbench.stages.f.demonstrate import (
    ConfigOutcome,
    Demonstration,
    DemoStatus,
    EditBatch,
    WrapperEdit,
    add_config_edit,
)
from cutile_workbench.stages.f.demonstrate import (
    EditRefused as EditRefused,  # the one refusal of an edit (stages/f: config and line edits)
)
from cutile_workbench.stages.f.finputs import FInputs

#: what the overlay copies of a TileGym tree (the rest of a checkout is not needed to run test_perf)
OVERLAY_ITEMS = ("src", "tests", "pytest.ini", "conftest.py", "pyproject.toml", "setup.py", "setup.cfg")
RunFn = Callable[[RunSpec, object], RunResult]


def slow_rows(inputs: FInputs) -> list[RatioRow]:
    return [
        r
        for r in (inputs.table.rows if inputs.table else ())
        if r.ratio is not None and round4(r.ratio) > DONE_MAX
    ]


def plan_edits(ws: Workspace, inputs: FInputs) -> tuple[list[WrapperEdit], list[str]]:
    """(edits in application order, notes on what is not tried and why) — module contract."""
    notes: list[str] = []
    if ws.tilegym is None:
        return [], [
            "no TileGym checkout (pass --tilegym DIR or set TILEGYM_PATH): the wrapper cannot be copied"
        ]
    rows = slow_rows(inputs)
    if not rows:
        return [], ["no slow config (every matched ratio ≤ 1.05): nothing to demonstrate"]
    audit = inputs.search_space
    tg = Path(ws.tilegym).resolve()
    batch = EditBatch(lambda rel: (tg / rel).read_text(encoding="utf-8"), notes=notes)
    for variant in dict.fromkeys(r.variant for r in rows):
        name = variant or "(single variant)"
        cmp = audit.for_variant(variant) if audit is not None else None
        if cmp is None:
            notes.append(
                f"{name}: the candidate's search space was not compared with the reference's "
                + (f"({'; '.join(audit.notes)})" if audit and audit.notes else "(no audit)")
            )
            continue
        if cmp.best is None:
            notes.append(
                f"{name}: the config the reference ran is not known (analysis.json names no best_config): "
                "no config to add"
            )
            continue
        if cmp.best_present is not False:
            notes.append(
                f"{name}: the reference's config ({cmp.best.label}) is already in the candidate's space: "
                "no wrapper-level config edit to demonstrate"
            )
            continue
        origin = cmp.candidate.origin.split(" ", 1)[0].rsplit(":", 1)[
            0
        ]  # src/tilegym/ops/cutile_rs/matmul.py
        origin = _tree_relative(origin, Path(ws.tilegym), tg)
        batch.attempt(
            name,
            origin,
            partial(
                add_config_edit,
                relpath=origin,
                space=cmp.candidate,
                config=cmp.best,
                reference_source=cmp.best_source or "reference/analysis.json best_config",
            ),
            unreadable=f"cannot read {tg / origin}",
            refused="not tried",
        )
    edits = batch.edits
    # issue 32: the line-level fixes at the lines the attributed launches point at, applied first
    # (bottom-up per file) so the evidence's line numbers stay valid; config edits are AST-placed
    from cutile_workbench.stages.f.actions import plan_line_edits
    from cutile_workbench.stages.f.diagnosis import diagnose

    root = Path(ws.tilegym)
    line_edits, line_notes = plan_line_edits(
        diagnose(inputs), lambda rel: (root / rel).read_text(encoding="utf-8")
    )
    notes += line_notes
    if line_edits:
        edits = _rebase(line_edits, edits, root)
    return edits, notes


def _rebase(line_edits: list[WrapperEdit], config_edits: list[WrapperEdit], root: Path) -> list[WrapperEdit]:
    """Line edits first; each config edit re-derived on the text its file has after them."""
    from dataclasses import replace

    texts = {e.relpath: e.after for e in line_edits}
    out = list(line_edits)
    for e in config_edits:
        if e.relpath not in texts:
            out.append(e)
            continue
        before = texts[e.relpath]
        # the config edit inserted text in the original: apply the same change on the edited text
        import difflib

        original = (root / e.relpath).read_text(encoding="utf-8")
        sm = difflib.SequenceMatcher(a=original, b=e.after, autojunk=False)
        inserted = [(i1, e.after[j1:j2]) for tag, i1, _i2, j1, j2 in sm.get_opcodes() if tag == "insert"]
        if len(inserted) != 1:
            out.append(e)  # not a pure insertion: applied on its own (it rewrites the file as it saw it)
            continue
        at, chunk = inserted[0]
        anchor = original[max(0, at - 200) : at]
        pos = before.find(anchor)
        if pos < 0:
            out.append(e)
            continue
        after = before[: pos + len(anchor)] + chunk + before[pos + len(anchor) :]
        texts[e.relpath] = after
        out.append(replace(e, before=before, after=after))
    return out


def tree_sha256(root: Path, items: Iterable[str] = ("src", "tests")) -> str:
    """Hash of every regular file (path + bytes) and every link (path + target) under ``root``'s items;
    build outputs (``target``) and ``__pycache__`` are not the tree's source and are skipped."""
    h = hashlib.sha256()
    for item in items:
        base = root / item
        if base.is_symlink():
            h.update(f"{item}\0link\0{os.readlink(base)}\0".encode())
            continue
        if not base.exists():
            continue
        entries = [base] if not base.is_dir() else []
        for dirpath, dirnames, filenames in os.walk(base) if base.is_dir() else ():  # links not followed
            dirnames.sort()
            for name in sorted(dirnames + filenames):
                entries.append(Path(dirpath, name))
        for p in entries:
            rel = p.relative_to(root).as_posix()
            if "__pycache__" in p.parts or "/target/" in f"/{rel}/" or rel.endswith("/target"):
                continue
            if p.is_symlink():
                h.update(f"{rel}\0link\0{os.readlink(p)}\0".encode())
            elif p.is_file():
                h.update(rel.encode() + b"\0")
                h.update(p.read_bytes())
                h.update(b"\0")
    return h.hexdigest()


def build_overlay(tilegym: Path, dest: Path) -> Path:
    """Copy what a test_perf run needs of ``tilegym`` into ``dest`` (module contract); returns ``dest``.

    Regular files only: a file link is copied as the bytes it points to, a dir link (other than a
    build output ``target``, linked) or a special file is refused (``UnsafePath``)."""
    dest.mkdir(parents=True)
    links: list[tuple[Path, Path]] = []
    for item in OVERLAY_ITEMS:
        src = tilegym / item
        if not (src.exists() or src.is_symlink()):
            continue
        if not src.is_dir() or src.is_symlink():
            _copy_regular(src, dest / item)
            continue
        for dirpath, dirnames, filenames in os.walk(src):  # links are not followed
            here = Path(dirpath)
            out = dest / here.relative_to(tilegym)
            out.mkdir(parents=True, exist_ok=True)
            keep = []
            for d in dirnames:
                p = here / d
                if d in ("__pycache__", ".git"):
                    continue
                if d == "target":  # the built library: linked, never copied or written
                    links.append((p, out / d))
                elif p.is_symlink():
                    raise UnsafePath(
                        "the TileGym tree holds a link to a directory: refused (the overlay copies regular "
                        "files only)",
                        path=str(p),
                    )
                else:
                    keep.append(d)
            dirnames[:] = keep
            for f in filenames:
                if not f.endswith(".pyc"):
                    _copy_regular(here / f, out / f)
    for src, link in links:
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(src.resolve(), target_is_directory=True)
    return dest


def _copy_regular(src: Path, dst: Path) -> None:
    """``src``'s bytes (a link resolved to the regular file it names) as a new regular file ``dst``."""
    if not src.is_file():  # a FIFO, a device, a dangling link, a dir link
        raise UnsafePath("the TileGym tree holds a special file or a dangling link: refused", path=str(src))
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst, follow_symlinks=True)  # dst is new: never a link, never the real file
    shutil.copymode(src, dst)


def _tree_relative(origin: str, given: Path, resolved: Path) -> str:
    """``origin`` relative to the TileGym tree, whichever spelling of the tree it starts with (the
    path as given, absolute or resolved): a relative ``--tilegym`` is never joined twice."""
    p = Path(origin)
    for base in (resolved, given.absolute(), given):
        if p.is_absolute() != base.is_absolute():
            continue
        try:
            return p.relative_to(base).as_posix()
        except ValueError:
            continue
    return origin


def _check_place(kernel_dir: Path, base: Path, tilegym: Path) -> None:
    """``workbench/demonstrate`` exists as a real dir of the kernel dir (reached by descriptor: no link
    followed), and the overlay is neither inside the real tree nor holds it; else UnsafePath."""
    with dir_at(kernel_dir, ["workbench", "demonstrate"], create=True):
        pass
    if is_inside(base, tilegym) or is_inside(tilegym, base):
        raise UnsafePath(
            f"refused: the demonstration's overlay {base} and the real TileGym tree {tilegym} overlap",
            path=str(base),
        )


def _main_launch(sets: Iterable[LaunchSet], params: str, backend_token: str) -> str:
    from cutile_workbench.artifacts.testids import id_token

    for s in sets:
        if s.params == params and id_token(s.backend) == backend_token and s.calls:
            kernels = [ln for ln in s.calls[-1].launches if ln.kind == "kernel"]
            if not kernels:
                return "no kernel launch captured"
            k = max(kernels, key=lambda ln: ln.end_ns - ln.start_ns)
            smem = (k.static_smem or 0) + (k.dynamic_smem or 0)
            return f"{k.name[:48]} grid {k.grid} block {k.block} regs {k.registers_per_thread} smem {smem} B"
    return ""


def _samples(rec: object) -> tuple[float | None, tuple[float, ...]]:
    phases = getattr(rec, "phases", {}) or {}
    fwd = phases.get("forward")
    if fwd is None:
        return None, ()
    return fwd.median_ms, tuple(fwd.samples_ms or ())


def demonstrate(
    ws: Workspace,
    inputs: FInputs,
    *,
    timeout_s: float = 900.0,
    keep_overlay: bool = False,
    python: str = sys.executable,
    run_fn: RunFn | None = None,
    env: dict[str, str] | None = None,
) -> Demonstration:
    """Apply the edits in a throwaway copy and re-run the slow configs (module contract)."""
    from cutile_workbench.services.runs import RunRequest, plan_runs
    from cutile_workbench.services.stage_e import read_only_reason

    why = read_only_reason(ws, preview="report f --dry-run")
    if why:
        raise InputError(why, path=str(ws.kernel_dir), key="--demonstrate")
    edits, notes = plan_edits(ws, inputs)
    if not edits:
        return Demonstration("not_applicable", "; ".join(notes) or "no wrapper-level edit derived")
    assert ws.tilegym is not None
    tilegym = Path(ws.tilegym).resolve()  # resolved once: every path below is built on it
    rows = [r for r in slow_rows(inputs) if any(e.variant in (r.variant, None) for e in edits)]
    named = {p for e in edits for p in e.params}  # line edits: the rows whose evidence named them
    rows += [
        r
        for r in (inputs.table.rows if inputs.table else ())
        if r.params in named and r.status == "OK" and all(r.params != x.params for x in rows)
    ]
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = ws.paths.workbench_dir / "demonstrate"
    overlay = base / stamp
    log = base / f"{stamp}.log"
    place_ok = True

    def rel(p: Path) -> str:
        return p.relative_to(ws.kernel_dir).as_posix()

    before_hash = tree_sha256(tilegym)
    t0 = time.monotonic()
    lines: list[str] = []
    status: DemoStatus = "done"
    reason = ""
    after_sets: list[LaunchSet] = []
    after_records: dict[str, object] = {}
    command = ""
    try:
        try:
            _check_place(ws.kernel_dir, base, tilegym)
        except WorkbenchError:
            place_ok = False
            raise
        build_overlay(tilegym, overlay / "TileGym")
        for e in edits:
            # by descriptor inside the overlay: a link planted there is refused, never written through
            atomic_write_bytes(overlay / "TileGym" / e.relpath, e.after.encode("utf-8"), overlay / "TileGym")
            lines.append(f"edited {e.relpath}:\n{e.diff}")
        child_env = dict(env or {})
        child_env["PYTHONPATH"] = os.pathsep.join(
            [
                str(overlay / "TileGym" / "src"),
                *(
                    p
                    for p in (child_env.get("PYTHONPATH") or os.environ.get("PYTHONPATH", "")).split(
                        os.pathsep
                    )
                    if p
                ),
            ]
        )
        k_expr = " or ".join(dict.fromkeys(r.params for r in rows))
        plan = plan_runs(
            RunRequest(
                ws.kernel,
                out_root=overlay / "out",
                tilegym=overlay / "TileGym",
                backends=("cutile-rs",),
                k_expr=k_expr,
                per_test_timeout_s=timeout_s,
                total_timeout_s=timeout_s,
                python=python,
                env=child_env,
            )
        )
        from cutile_workbench.run.runner import run as run_suite

        runner = run_fn or (lambda spec, out: run_suite(spec, out))  # type: ignore[arg-type]
        for br in plan.runs:
            command = br.spec.describe()
            result = runner(br.spec, plan.out)
            lines.append(result.raw_log_text if hasattr(result, "raw_log_text") else "")
            write_results(result, br.spec, plan.out)
            after_sets += list(result.launch_sets)
            if result.rc == 2:
                status, reason = (
                    "timed_out",
                    f"the re-run stopped after {timeout_s:g} s (rc 2): {'; '.join(result.notes)}",
                )
            elif result.rc != 0:
                status, reason = (
                    "failed",
                    (
                        f"the re-run exited {result.rc}: "
                        + "; ".join(f"{n}: {w}" for n, w in {**result.failed, **result.not_run}.items())
                        or "; ".join(result.notes)
                    ),
                )
        from cutile_workbench.artifacts.workspace import open_workspace
        from cutile_workbench.stages.e.report import load_candidate

        if status == "done":
            after_ws = open_workspace(ws.kernel, out_root=overlay / "out", strict=False)
            cand, _parsed, _notes = load_candidate(after_ws)
            after_records = {r.params: r for r in cand.records}
    except (WorkbenchError, OSError) as exc:
        status, reason = "failed", str(exc)
    finally:
        after_hash = tree_sha256(tilegym)
        if place_ok:  # never beside a link out of the kernel dir
            try:
                atomic_write_bytes(log, ("\n".join(lines) + "\n").encode("utf-8"), Path(ws.kernel_dir))
            except WorkbenchError as exc:
                status, reason = (
                    "failed",
                    f"{reason + '; ' if reason else ''}the run log was not written: {exc}",
                )
            if not keep_overlay:
                shutil.rmtree(overlay, ignore_errors=True)
    outcomes = []
    for r in rows:
        before_ms, before_s = _samples(inputs.candidate_records.get((r.func_key, r.params)))
        ref_rec = (inputs.baseline_records.get(r.baseline_backend or "", {}) or {}).get(
            (r.func_key, r.params)
        )
        ref_ms, ref_s = _samples(ref_rec)
        after_ms, after_s = _samples(after_records.get(r.params))
        outcomes.append(
            ConfigOutcome(
                r.params,
                r.baseline_backend or "?",
                before_ms,
                after_ms,
                ref_ms,
                before_ci=ratio_ci(before_s, ref_s) if before_s and ref_s else None,
                after_ci=ratio_ci(after_s, ref_s) if after_s and ref_s else None,
                after_launches=getattr(
                    getattr(after_records.get(r.params), "phases", {}).get("forward"),
                    "launches_per_iter",
                    None,
                )
                if r.params in after_records
                else None,
                after_kernel=getattr(
                    getattr(after_records.get(r.params), "phases", {}).get("forward"), "kernel_name", None
                )
                if r.params in after_records
                else None,
                after_resources=_main_launch(after_sets, r.params, "cutile_rs"),
                reference_resources=_main_launch(
                    inputs.launch_sets, r.params, (r.baseline_backend or "").replace("-", "_")
                ),
            )
        )
    if status == "done" and not after_records:
        status, reason = "failed", "the re-run wrote no candidate record for the slow configs"
    if before_hash != after_hash:
        status, reason = "failed", "the real TileGym tree changed during the demonstration (see the hashes)"
    return Demonstration(
        status,
        reason,
        tuple(edits),
        tuple(outcomes),
        rel(overlay),
        keep_overlay,
        rel(log),
        str(tilegym),
        before_hash,
        after_hash,
        command,
        time.monotonic() - t0,
    )
