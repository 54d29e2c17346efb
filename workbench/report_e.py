"""Plan stage E's report set (contract §5.1–5.3) and validate it before anything is written.

Contract of :func:`plan_e_report`: from a :class:`~workbench.workspace.Workspace` it renders

- ``reports/performance.md``: first line ``VERDICT: DONE|INVESTIGATE``, the per-config table
  (baseline backend and ms, candidate ms, ratio ``1.07x``, 95% CI when known, launches/call when
  known, row verdict), per-variant sections with ``variant_geomean=`` lines, ``### Missing /
  failed configs`` (NA rows), configs without a baseline, raw CUPTI rows (median, nrep, rel_std),
  exactly ONE ``geomean_ratio=X.XXXX`` line, ``Geo-mean ratio: X.XXx``, ``Severity: …`` and the CI /
  inconclusive flag in prose;
- ``perf_cutile_rs.txt``: the sanitized raw log (raw = ``reports/agent_logs/perf_cutile_rs.full.txt``
  if present, else the current ``perf_cutile_rs.txt``; or ``raw_log_text``);
- ``reports/agent_logs/perf_investigation.log`` (empty on a clean run);
- ``reports/agent_logs/agent_e.md`` (§5.3: environment, commands, pytest rc, logs, ratio summary,
  validator output verbatim with ``exit=N``) and ``reports/agent_e.md`` (readable summary).

It validates the planned set in-process (validate_perf_log ×2 + validate_agent_e on the overlay)
and, when ``run_real_scripts`` and the TileGym checkout has the skill's scripts, with the real
scripts on a staged copy; ``ok`` only if every exit code is 0. BLOCKED (no usable data) raises
:class:`~workbench.errors.Blocked`; malformed inputs raise ``InputError`` (strict parsing). The
verdict is never DONE with a missing or failed config (asserted, not just assumed).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from workbench import __version__
from workbench.errors import Blocked, InputError, WorkbenchError
from workbench.model import PerfLog, PerfRecord, PlannedFile, RatioRow, RatioTable, ReportPlan
from workbench.stats import build_ratio_table, round4
from workbench.validators import (
    ValidatorResult,
    run_real_validator,
    transcript,
    validate_agent_e,
    validate_perf_log,
)
from workbench.workspace import Workspace

PERFORMANCE_MD = "reports/performance.md"
PERF_LOG = "perf_cutile_rs.txt"
INVESTIGATION_LOG = "reports/agent_logs/perf_investigation.log"
AGENT_E_LOG = "reports/agent_logs/agent_e.md"
AGENT_E_REPORT = "reports/agent_e.md"
FULL_LOG = "reports/agent_logs/perf_cutile_rs.full.txt"
BENCH_ENV_KEYS = ("CUPTI", "WARMUP", "REP", "MIN_REP", "INITIAL_REP", "QUIET", "MODE")


def _ms(x: float | None) -> str:
    if x is None:
        return "NA"
    return f"{x:.4f}" if x >= 0.1 else f"{x:.6f}"


def _cell(text: object) -> str:
    """A markdown table cell that can neither break the table nor start a counted line."""
    return str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def _ratio(r: float | None) -> str:
    return "NA" if r is None else f"{r:.2f}x"


def _ci(lo: float | None, hi: float | None) -> str:
    return "–" if lo is None or hi is None else f"{lo:.3f}–{hi:.3f}x"


def _launches(row: RatioRow) -> str:
    if row.candidate_launches is None and row.baseline_launches is None:
        return "–"
    c = "?" if row.candidate_launches is None else str(row.candidate_launches)
    b = "?" if row.baseline_launches is None else str(row.baseline_launches)
    return f"{c} / {b}"


def _row_verdict(row: RatioRow) -> str:
    return row.row_verdict


_TABLE_HEAD = ("| Config | baseline | baseline (ms) | cutile-rs (ms) | ratio | 95% CI | launches/call (cand / base) "
               "| verdict |\n|--------|----------|---------------|----------------|-------|--------|"
               "------------------------------|---------|\n")


def _table(rows: list[RatioRow]) -> str:
    out = [_TABLE_HEAD]
    for r in rows:
        out.append(f"| {_cell(r.params)} | {_cell(r.baseline_backend or 'NA')} | {_ms(r.baseline_ms)} | "
                   f"{_ms(r.candidate_ms)} | {_ratio(r.ratio)} | {_ci(r.ci_low, r.ci_high)} | {_launches(r)} | "
                   f"{_row_verdict(r)} |\n")
    return "".join(out)


def _raw_rows(table: RatioTable, candidate: PerfLog, baselines: Mapping[str, PerfLog]) -> str:
    index: dict[tuple[str, str, str], PerfRecord] = {}
    for name, log in [("candidate", candidate), *baselines.items()]:
        for record in log.records:
            index.setdefault((name, record.func_key, record.params), record)
    lines = ["| Config | log | framework | median (ms) | nrep | rel_std (%) | launches/iter | top kernel |\n",
             "|--------|-----|-----------|-------------|------|-------------|---------------|------------|\n"]
    for row in table.rows:
        names = ["candidate"] + ([row.baseline_backend] if row.baseline_backend else [])
        for name in names:
            rec = index.get((name, row.func_key, row.params))
            fwd = rec.forward if rec else None
            if rec is None or fwd is None:
                continue
            rel = "–" if fwd.rel_std_pct is None else f"{fwd.rel_std_pct:.2f}"
            lines.append(f"| {_cell(row.params)} | {_cell(name)} | {_cell(rec.framework)} | {_ms(fwd.median_ms)} | "
                         f"{fwd.nrep if fwd.nrep is not None else '–'} | {rel} | "
                         f"{fwd.launches_per_iter if fwd.launches_per_iter is not None else '–'} | "
                         f"{_cell(fwd.kernel_name or '–')} |\n")
    return "".join(lines)


def _frameworks(log: PerfLog) -> str:
    names = sorted({r.framework for r in log.records})
    return ", ".join(_cell(n) for n in names) or "none"


def _verdict_prose(table: RatioTable) -> str:
    assert table.geomean is not None
    parts = [f"Verdict: {table.verdict} (geomean {round4(table.geomean):.4f}, severity {table.severity}"]
    if table.geomean_ci is not None:
        lo, hi = table.geomean_ci
        parts.append(f", bootstrap 95% CI {lo:.4f}–{hi:.4f}")
        parts.append(", INCONCLUSIVE: the CI straddles the 1.05 gate" if table.inconclusive
                     else ", conclusive at the 1.05 gate")
    else:
        parts.append(", no CI: the logs carry no raw samples")
    parts.append(").")
    return "".join(parts)


def render_performance_md(kernel: str, table: RatioTable, candidate: PerfLog,
                          baselines: Mapping[str, PerfLog], *, reference: str) -> str:
    """``reports/performance.md`` (§5.2 plus the workbench's CI, launches and variant sections)."""
    if table.geomean is None or table.verdict not in ("DONE", "INVESTIGATE"):
        raise Blocked("no usable data: no matched config", key="performance.md")
    ok = table.matched
    na = [r for r in table.rows if r.status == "NA"]
    nob = [r for r in table.rows if r.status == "NO_BASELINE"]
    out = [f"VERDICT: {table.verdict}\n", "\n", f"## Performance Results: {kernel}\n", "\n",
           f"Ratio = candidate (cutile-rs; framework(s) in the log: {_frameworks(candidate)}) / winning baseline, "
           f"CUPTI forward medians. Baseline: {reference}.\n",
           f"Rows: {len(table.rows)}; matched: {len(ok)}; missing/failed: {len(na)}; without baseline: {len(nob)}.\n",
           "\n", _table(ok)]
    variants = sorted({r.variant for r in ok if r.variant is not None})
    for v in variants:
        vrows = [r for r in ok if r.variant == v]
        backends = ", ".join(sorted({r.baseline_backend or "NA" for r in vrows}))
        out += ["\n", f"### Variant: {v} (baseline: {backends})\n", "\n", _table(vrows), "\n",
                f"variant_geomean={round4(table.variant_geomeans[v]):.4f}\n"]
    out += ["\n", "### Missing / failed configs\n", "\n"]
    if na:
        out.append("| Config | status | reason |\n|--------|--------|--------|\n")
        out += [f"| {_cell(r.params)} | NA | {_cell(r.reason)} |\n" for r in na]
    else:
        out.append("None: every selected config has a valid candidate median.\n")
    if nob:
        out += ["\n", "### Configs without a baseline match (excluded from the geomean)\n", "\n",
                "| Config | cutile-rs (ms) | reason |\n|--------|----------------|--------|\n"]
        out += [f"| {_cell(r.params)} | {_ms(r.candidate_ms)} | {_cell(r.reason)} |\n" for r in nob]
    out += ["\n", "### Raw CUPTI rows\n", "\n", _raw_rows(table, candidate, baselines)]
    if table.notes:
        out += ["\n", "### Notes\n", "\n"] + [f"- {_cell(n)}\n" for n in table.notes]
    if table.verdict == "DONE":
        slow = [r for r in ok if r.ratio is not None and r.ratio > 1.05]
        if slow:
            out += ["\n", f"Info: {len(slow)} row(s) above 1.05x; the gate is the overall geomean only.\n"]
    g = round4(table.geomean)
    out += ["\n", f"geomean_ratio={g:.4f}\n", f"Geo-mean ratio: {table.geomean:.2f}x\n",
            f"Severity: {table.severity}\n", "\n", _verdict_prose(table) + "\n"]
    return "".join(out)


def _bench_env(meta: Mapping[str, object] | None) -> str:
    env = meta.get("env") if meta else None
    src: Mapping[str, object] = env if isinstance(env, dict) else os.environ
    vals = [f"{k}={src[k]}" for k in BENCH_ENV_KEYS if k in src]
    return " ".join(vals) if vals else "unset (TileGym defaults: CUPTI=1 WARMUP=100 REP=50 MIN_REP=2)"


def _meta(meta: Mapping[str, object] | None, *keys: str) -> str | None:
    if not meta:
        return None
    for k in keys:
        v = meta.get(k)
        if v not in (None, ""):
            return str(v)
    return None


def render_agent_e_log(ws: Workspace, table: RatioTable, *, command: str, pytest_rc: int, rc_source: str,
                       raw_source: str, sanitized: object, validator_text: str) -> str:
    """``reports/agent_logs/agent_e.md`` (§5.3)."""
    meta = ws.session_meta()
    kept = getattr(sanitized, "kept_records", None)
    dropped = list(getattr(sanitized, "dropped_nodeids", []) or [])
    verbatim = getattr(sanitized, "verbatim", None)
    inv_text = getattr(sanitized, "investigation_log", "")
    g = round4(table.geomean) if table.geomean is not None else None
    out = [f"# Agent E log: {ws.kernel}\n", "\n", "## Environment\n", "\n",
           f"- benchmark settings: {_bench_env(meta)}\n",
           f"- GPU: {_meta(meta, 'gpu', 'gpu_name', 'device') or 'not recorded'}\n",
           f"- tileiras: {_meta(meta, 'tileiras', 'tileiras_bin') or os.environ.get('TILEIRAS_BIN') or 'not recorded'}\n",
           f"- kernel dir: {ws.kernel_dir} (source: {ws.source})\n",
           f"- TileGym: {ws.tilegym or 'not given'}\n",
           f"- written by cutile-workbench {__version__}\n", "\n", "## Commands\n", "\n",
           f"$ {command}  → pytest_rc={pytest_rc} ({rc_source}); full log: {FULL_LOG}\n", "\n",
           "## Logs\n", "\n",
           f"- raw input: {raw_source}\n",
           f"- sanitized: {PERF_LOG} ({'verbatim copy, pytest rc 0' if verbatim else 'complete record sections only'};"
           f" {kept if kept is not None else '?'} record(s) kept)\n",
           f"- diagnostics: {INVESTIGATION_LOG} ({len(inv_text.splitlines())} line(s))\n"]
    if dropped:
        out.append(f"- dropped (moved to diagnostics): {', '.join(dropped)}\n")
    gtxt = f"{g:.4f}" if g is not None else "NA"
    out += ["\n", "## Ratio summary\n", "\n",
            f"rows={len(table.rows)} matched={len(table.matched)} missing={len(table.missing)} "
            f"geomean_ratio={gtxt} severity={table.severity} verdict={table.verdict}\n"]
    if table.geomean_ci:
        out.append(f"bootstrap 95% CI of the geomean: {table.geomean_ci[0]:.4f}–{table.geomean_ci[1]:.4f}"
                   f"{' (inconclusive at 1.05)' if table.inconclusive else ''}\n")
    out += ["\n", "## Validator output\n", "\n", "~~~~text\n", validator_text, "~~~~\n"]
    return "".join(out)


def render_agent_e_report(ws: Workspace, table: RatioTable) -> str:
    """``reports/agent_e.md``: the readable summary (the final gate's fallback log location)."""
    assert table.geomean is not None
    ok = sorted(table.matched, key=lambda r: -(r.ratio or 0))
    out = [f"# Agent E report: {ws.kernel}\n", "\n", f"**{table.verdict}**: geomean {round4(table.geomean):.4f} "
           f"({table.geomean:.2f}x), severity {table.severity}.\n", "\n"]
    if table.geomean_ci:
        out.append(f"Bootstrap 95% CI {table.geomean_ci[0]:.4f}–{table.geomean_ci[1]:.4f}"
                   f"{', inconclusive at the 1.05 gate' if table.inconclusive else ''}.\n\n")
    out.append(f"{len(table.matched)} of {len(table.rows)} config(s) matched; {len(table.missing)} missing or "
               "without baseline.\n\n")
    if ok:
        out.append("Slowest configs (candidate / baseline):\n\n")
        out += [f"- {_cell(r.params)}: {_ratio(r.ratio)} ({_ms(r.candidate_ms)} vs {_ms(r.baseline_ms)} ms, "
                f"{r.baseline_backend}; launches {_launches(r)})\n" for r in ok[:5]]
    for r in table.missing:
        out.append(f"- {_cell(r.params)}: {r.status} ({_cell(r.reason)})\n")
    out.append("\n")
    if table.verdict == "DONE":
        out.append("Next: none (DONE is terminal).\n")
    else:
        out.append("Next: route to C (IR diff) / F (perf investigation); see reports/performance.md.\n")
    return "".join(out)


def _infer_rc(candidate: PerfLog, raw_text: str) -> tuple[int, str]:
    if any(o.outcome in ("failed", "error") for o in candidate.outcomes):
        return 1, "inferred from failed tests in the log"
    if re.search(r"(?m)^=+ .*\b(failed|error|errors)\b.* =+\s*$", raw_text):
        return 1, "inferred from the pytest summary line"
    return 0, "inferred: no failures in the log"


def plan_e_report(
    ws: Workspace,
    *,
    table: RatioTable | None = None,
    raw_log_text: str | None = None,
    pytest_rc: int | None = None,
    command: str | None = None,
    run_real_scripts: bool = True,
) -> ReportPlan:
    """Render + validate E's report set for ``ws`` (see module docstring); nothing is written."""
    from workbench.perflog.parser import parse_perf_log
    from workbench.perflog.sanitizer import sanitize

    paths = ws.paths
    if raw_log_text is not None:
        raw_path = paths.perf_full_log
        raw_source = "supplied raw log text"
    else:
        found = ws.raw_log_path()
        if found is None:
            raise Blocked("no candidate perf log: neither reports/agent_logs/perf_cutile_rs.full.txt nor "
                          "perf_cutile_rs.txt exists", path=str(paths.perf_cutile_rs))
        raw_path = found
        raw_source = os.path.relpath(found, paths.root)
        try:
            raw_log_text = found.read_bytes().decode("utf-8", "surrogateescape")
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", path=str(found)) from None
    candidate = parse_perf_log(raw_path, text=raw_log_text, strict=True)
    baselines = {k: v for k, v in ws.baseline_logs().items() if not k.startswith("cutile_rs")}
    if table is None:
        table = build_ratio_table(ws.kernel, candidate, baselines, ws.analysis)
    if table.verdict == "BLOCKED" or table.geomean is None:
        reason = "; ".join(table.notes) or "no matched config (no candidate median with a baseline)"
        raise Blocked(f"no usable data: {reason}", path=str(paths.root))
    has_missing = any(r.status == "NA" for r in table.rows)
    if table.verdict == "DONE" and has_missing:  # the invariant, enforced even for a supplied table
        raise WorkbenchError("internal: refusing DONE with a missing or failed config", path=str(paths.root))
    meta = ws.session_meta()
    if pytest_rc is None:
        recorded = meta.get("pytest_rc") if meta else None
        if isinstance(recorded, int) and not isinstance(recorded, bool):
            pytest_rc, rc_source = recorded, "recorded in workbench/session.json"
        else:
            pytest_rc, rc_source = _infer_rc(candidate, raw_log_text)
    else:
        rc_source = "given"
    if command is None:
        command = _meta(meta, "command") or "not recorded (raw log supplied)"
    sanitized = sanitize(raw_log_text, pytest_rc=pytest_rc, source=str(raw_path))

    if ws.analysis is not None and ws.analysis.reference_backend:
        reference = f"`{ws.analysis.reference_backend}` (analysis.json reference_backend, per-variant winners applied)"
    else:
        reference = "the faster available baseline per config (analysis.json names no reference_backend)"
    perf_md = render_performance_md(ws.kernel, table, candidate, baselines, reference=reference)
    files = {
        PERFORMANCE_MD: perf_md,
        PERF_LOG: sanitized.validator_log,
        INVESTIGATION_LOG: sanitized.investigation_log,
        AGENT_E_REPORT: render_agent_e_report(ws, table),
    }
    if raw_log_text is not None and not paths.perf_full_log.is_file():
        files[FULL_LOG] = raw_log_text  # keep the raw tee next to the sanitized log (§1.2)

    def agent_log(validator_text: str) -> str:
        return render_agent_e_log(ws, table, command=command or "", pytest_rc=pytest_rc or 0,
                                  rc_source=rc_source, raw_source=raw_source, sanitized=sanitized,
                                  validator_text=validator_text)

    # validator results depend on agent_e.md only through "non-empty", so validate with a draft
    files[AGENT_E_LOG] = agent_log("(validator output follows in the final log)\n")
    results = _validate(ws, files, run_real_scripts)
    text = transcript(results)
    files[AGENT_E_LOG] = agent_log(text)
    final = validate_agent_e(paths.root, files)
    if final.output != next(r for r in results if "validate_agent_e" in r.command).output:
        results.append(final)  # pragma: no cover - would mean the draft changed the outcome
        text = transcript(results)
    ok = all(r.exit_code == 0 for r in results)
    g = table.geomean
    block = ("<PERF_LOG>\n"
             f"geomean_ratio={g:.2f}x\n"
             f"severity={table.severity}\n"
             f"report={paths.performance_md}\n"
             f"perf_log={paths.perf_cutile_rs}\n"
             f"investigation_log={paths.perf_investigation_log}\n"
             "</PERF_LOG>\n")
    planned = [PlannedFile(rel, content) for rel, content in files.items()]
    return ReportPlan(stage="E", kernel=ws.kernel, kernel_dir=paths.root, files=planned, verdict=table.verdict,
                      validator_output=text, ok=ok, perf_log_block=block)


def _validate(ws: Workspace, files: Mapping[str, str], run_real_scripts: bool) -> list[ValidatorResult]:
    root = ws.paths.root
    results = [
        validate_perf_log(root / PERF_LOG, PERF_LOG, text=files[PERF_LOG]),
        validate_perf_log(root / "baseline_perf_cutile.txt", "baseline_perf_cutile.txt"),
        validate_agent_e(root, files),
    ]
    if run_real_scripts and ws.tilegym is not None:
        for script, args in (("validate_perf_log.sh", ["{BASE}/" + PERF_LOG, PERF_LOG]),
                             ("validate_perf_log.sh", ["{BASE}/baseline_perf_cutile.txt",
                                                       "baseline_perf_cutile.txt"]),
                             ("validate_agent_e.sh", [ws.kernel])):
            res = run_real_validator(ws.tilegym, script, args, root, files)
            if res is not None:
                results.append(res)
    return results


def real_scripts_available(tilegym: Path | None) -> bool:
    from workbench.validators import find_scripts_dir

    return find_scripts_dir(tilegym) is not None
