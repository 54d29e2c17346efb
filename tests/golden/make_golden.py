"""Record golden transcripts of TileGym's real validator scripts (needs the TileGym snapshot).

Usage (from the repo root)::

    .venv/bin/python tests/golden/make_golden.py [--tilegym .fetched/TileGym] [--check]

For every case it builds the inputs in a fresh temp directory, runs ``bash <script> <args>`` from
``<tilegym>/skills/tilegym-converting-cutile-triton-to-cutile-rs/scripts`` with a minimal env
(``PATH``, ``LC_ALL``; ``CUTILE_KERNEL_OUT_ROOT`` for the agent validators), and records the inputs
plus the real stdout and exit code in ``tests/golden/<script>.json``. The temp directory is written
as ``{TMP}`` (the only normalisation). It also runs our twin on each case and prints every
mismatch (``--check`` only compares, writes nothing). Inputs come from the existing test builders
(tests/unit/test_validators.py, tests/unit/test_ir_audit.py, tests/fixtures/e/builders.py), the recorded H200
sessions under cutile_workbench/profiles/*/session/*/ (referenced by repo path + sha256, not inlined), real pytest
child runs of tests/fixtures/perflog's TileGym-convention suite, the E/F report planners on the
real fixtures, and a few labelled SYNTHETIC edits.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import io
import json
import random
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
REPO = TESTS.parent
SKILL_SCRIPTS = Path("skills/tilegym-converting-cutile-triton-to-cutile-rs/scripts")
INLINE_LIMIT = 400  # bytes: larger inputs/outputs are stored zlib+base64 (JSON size budget)
SHA_CHARS = 16  # sha256 prefix recorded for repo-referenced inputs (drift check, not security)


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


G = _load("golden_test_module", TESTS / "test_golden_validators.py")
TV = _load("golden_src_test_validators", TESTS / "test_validators.py")
TI = _load("golden_src_test_ir_audit", TESTS / "test_ir_audit.py")
EB = _load("e_builders", TESTS / "fixtures" / "e" / "builders.py")
SUITE = _load("perflog_suite_runner", TESTS / "fixtures" / "perflog" / "suite_runner.py")

Case = dict[str, Any]


# --------------------------------------------------------------------------- encoding


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def repo_file(rel: str) -> dict[str, str]:
    return {"repo": rel, "sha256": _sha((REPO / rel).read_bytes())[:SHA_CHARS]}


def spec_for(data: bytes) -> bytes | dict[str, str]:
    """A tracked repo file with these exact bytes when one exists (referenced, not inlined), else the bytes."""
    return _REPO_BY_SHA.get(_sha(data)) or data


def _repo_candidates() -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    globs = (
        "cutile_workbench/profiles/*/session/*/**/*.txt",
        "cutile_workbench/profiles/*/session/*/**/*.mlir",
        "cutile_workbench/profiles/*/session/*/**/*.tileir",
        "tests/fixtures/e/real/**/*.txt",
        "tests/fixtures/ir/*.mlir",
        "tests/fixtures/perflog/logs/*.txt",
    )
    for g in globs:
        for p in sorted(REPO.glob(g)):
            rel = p.relative_to(REPO).as_posix()
            out.setdefault(_sha(p.read_bytes()), repo_file(rel))
    return out


_REPO_BY_SHA = _repo_candidates()


def files_spec(files: dict[str, bytes], prefix: str = "") -> dict[str, bytes | dict[str, str]]:
    return {prefix + rel: spec_for(data) for rel, data in files.items()}


def snapshot(kdir: Path) -> dict[str, bytes]:
    return {p.relative_to(kdir).as_posix(): p.read_bytes() for p in sorted(kdir.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- validate_perf_log.sh


def perf_cases() -> Iterator[Case]:
    log = "perf_cutile_rs.txt"
    for name in sorted(TV.PERF_CASES):
        for label in (None, "mylabel"):
            yield {
                "name": name + ("" if label is None else "+label"),
                "origin": "SYNTHETIC edge case from tests/unit/test_validators.py PERF_CASES (real H200 §3.3 record)",
                "files": {log: spec_for(TV.PERF_CASES[name])},
                "args": ["{TMP}/" + log] + ([label] if label else []),
            }
    yield {
        "name": "missing",
        "origin": "SYNTHETIC: path does not exist",
        "files": {},
        "args": ["{TMP}/absent.txt"],
    }
    yield {
        "name": "missing+label",
        "origin": "SYNTHETIC: path does not exist",
        "files": {},
        "args": ["{TMP}/absent.txt", "lbl"],
    }
    yield {
        "name": "directory",
        "origin": "SYNTHETIC: path is a directory",
        "files": {},
        "dirs": ["adir"],
        "args": ["{TMP}/adir"],
    }
    for label in (None, "lbl"):
        yield {
            "name": "empty" + ("" if label is None else "+label"),
            "origin": "SYNTHETIC: empty file",
            "files": {log: b""},
            "args": ["{TMP}/" + log] + ([label] if label else []),
        }
    good = TV.PERF_CASES["pass"]
    for name, fname, label in (
        ("unicode_space_filename", "my log \u00fc.txt", None),
        ("empty_label_uses_basename", log, ""),
        ("dash_label", log, "-n"),
        ("backslash_label", log, "a\\nb"),
        ("no_extension", "perflog", None),
    ):
        yield {
            "name": name,
            "origin": "SYNTHETIC name/label edge case, REAL H200 §3.3 record",
            "files": {fname: good},
            "args": ["{TMP}/" + fname] + ([label] if label is not None else []),
        }
    # REAL recorded H200 logs, referenced by repo path
    real = sorted({s["repo"] for s in _REPO_BY_SHA.values() if s["repo"].endswith(".txt")})
    for rel in real:
        base = Path(rel).name
        yield {
            "name": "real:" + rel,
            "origin": "REAL H200 log recorded in the repo",
            "files": {base: repo_file(rel)},
            "args": ["{TMP}/" + base] + (["perf_cutile_rs.txt"] if base.endswith(".full.txt") else []),
        }
    # REAL pytest child runs of the TileGym-convention suite (real H200 numbers) in several output modes
    modes = {
        "v": ("-v", "--print-record"),
        "q": ("-q", "--print-record"),
        "sv_color": ("-sv", "--print-record", "--color=yes"),
        "default": ("--print-record",),
        "q_no_print_record": ("-q",),
        "q_passing_only": ("-q", "--print-record", "-k", "not 8192-8192"),
        "v_passing_only": ("-v", "--print-record", "-k", "not 8192-8192"),
    }
    for mode, args in modes.items():
        run = SUITE.run_suite(args)
        data = run.output.replace(str(run.workdir), "<workdir>").encode()
        yield {
            "name": f"suite:{mode}",
            "origin": f"REAL pytest child output ({' '.join(args)}) of "
            "tests/fixtures/perflog/perf_suite_rms_norm.py",
            "files": {log: data},
            "args": ["{TMP}/" + log],
        }
        if mode == "q_passing_only":
            yield {
                "name": "suite:q_passing_only+crlf",
                "origin": "SYNTHETIC CRLF edit of a real suite log",
                "files": {log: data.replace(b"\n", b"\r\n")},
                "args": ["{TMP}/" + log, "crlf"],
            }
            cut = data[: data.index(b"Performance Test Results") + 10]
            yield {
                "name": "suite:q_passing_only+truncated",
                "origin": "SYNTHETIC: real suite log cut mid-marker",
                "files": {log: cut},
                "args": ["{TMP}/" + log],
            }


# --------------------------------------------------------------------------- validate_agent_e.sh


def _planned_e(kind: str) -> dict[str, bytes]:
    from cutile_workbench.artifacts.workspace import open_workspace
    from cutile_workbench.artifacts.writer import write_plan
    from cutile_workbench.stages.e.report import plan_e_report

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        kernel = "rms_norm_hotpath" if kind == "hotpath" else "rms_norm"
        if kind == "missing":
            EB.kernel_dir(
                root,
                kernel,
                candidate={"static_persistent-4096-1024-torch.bfloat16": 0.00701},
                baseline=dict(zip(TI_P3, [0.00701, 0.08278, 0.07466], strict=True)),
                failed=(TI_P3[1],),
            )
        else:
            EB.copy_real(root, kernel)
        plan = plan_e_report(open_workspace(kernel, out_root=root, env={}), run_real_scripts=False)
        assert plan.ok, plan.validator_output
        write_plan(plan)
        return snapshot(root / kernel)


TI_P3 = [
    "static_persistent-4096-1024-torch.bfloat16",
    "static_persistent-16384-2048-torch.bfloat16",
    "static_persistent-8192-8192-torch.bfloat16",
]
_E_READ = (
    "reports/performance.md",
    "perf_cutile_rs.txt",
    "baseline_perf_cutile.txt",
    "reports/agent_logs/agent_e.md",
)


def agent_e_cases() -> Iterator[Case]:
    for name in sorted(TV.E_CASES):
        yield {
            "name": name,
            "origin": "SYNTHETIC edge case from tests/unit/test_validators.py E_CASES",
            "files": files_spec(TV.E_CASES[name], "out/rms_norm/"),
            "args": ["rms_norm"],
            "env_root": "{TMP}/out",
        }
    for kind in ("done", "hotpath", "missing"):
        full = _planned_e(kind)
        files = {k: v for k, v in full.items() if k in _E_READ}  # only what the script reads
        kernel = "rms_norm_hotpath" if kind == "hotpath" else "rms_norm"
        origin = (
            "REAL H200 logs (tests/fixtures/e/real) through plan_e_report + write_plan"
            if kind != "missing"
            else "REAL H200 medians, SYNTHETIC failed config, through plan_e_report + write_plan"
        )
        variants: dict[str, dict[str, bytes]] = {"": files}
        if kind == "done":
            pmd = files["reports/performance.md"]
            variants["+crlf_report"] = {**files, "reports/performance.md": pmd.replace(b"\n", b"\r\n")}
            variants["+no_agent_log"] = {
                k: v for k, v in files.items() if k != "reports/agent_logs/agent_e.md"
            }
            variants["+raw_candidate_log_with_failure"] = {
                **files,
                "perf_cutile_rs.txt": files["perf_cutile_rs.txt"] + b"FAILED tests/x.py::t[cutile_rs-1]\n",
            }
            variants["+geomean_x_suffix"] = {
                **files,
                "reports/performance.md": pmd.replace(b"\ngeomean_ratio=", b"\ngeomean_ratio=x", 1),
            }
        for suffix, fs in variants.items():
            yield {
                "name": f"planned:{kind}{suffix}",
                "origin": origin + (" + SYNTHETIC edit" if suffix else ""),
                "files": files_spec(fs, f"out/{kernel}/"),
                "args": [kernel],
                "env_root": "{TMP}/out",
            }
    for kernel in ("my kernel", "k\u00e9rnel-2"):
        yield {
            "name": f"kernel_name:{kernel}",
            "origin": "SYNTHETIC kernel-name edge case (E_CASES pass)",
            "files": files_spec(TV.E_CASES["pass"], f"out/{kernel}/"),
            "args": [kernel],
            "env_root": "{TMP}/out",
        }
    yield {
        "name": "kernel_dir_missing",
        "origin": "SYNTHETIC: no kernel dir at all",
        "files": {},
        "dirs": ["out"],
        "args": ["rms_norm"],
        "env_root": "{TMP}/out",
    }


# --------------------------------------------------------------------------- validate_agent_f.sh


def _planned_f(kernel: str, launches: str, ir: bool) -> dict[str, bytes]:
    import shutil

    from cutile_workbench.cli import main

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "out"
        kdir = root / kernel
        shutil.copytree(TESTS / "fixtures/e/real" / kernel, kdir)
        shutil.copyfile(kdir / "reports/agent_logs/perf_cutile_rs.full.txt", kdir / "perf_cutile_rs.txt")
        (kdir / "workbench").mkdir()
        shutil.copyfile(TESTS / "fixtures/f" / launches, kdir / "workbench/launches.json.gz")
        if ir:
            (kdir / "reference").mkdir(exist_ok=True)
            (kdir / "generated").mkdir()
            shutil.copyfile(
                TESTS / "fixtures/ir/rms_norm_ref_16x1024.mlir", kdir / "reference/reference.mlir"
            )
            shutil.copyfile(
                TESTS / "fixtures/ir/rms_norm_ref_4x8192.mlir", kdir / "generated/generated_canon.mlir"
            )
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            rc = main(["report", "f", kernel, "--out-root", str(root), "--yes", "--no-real-scripts"])
        assert rc == 0, f"report f {kernel} failed rc={rc}"
        return {
            k: v
            for k, v in snapshot(kdir).items()
            if k.startswith("reports/perf_investigation_") or k == "reports/agent_logs/agent_f.md"
        }


def agent_f_cases() -> Iterator[Case]:
    for name in sorted(TV.F_CASES):
        yield {
            "name": name,
            "origin": "SYNTHETIC edge case from tests/unit/test_validators.py F_CASES",
            "files": files_spec(TV.F_CASES[name], "out/softmax/"),
            "args": ["softmax"],
            "env_root": "{TMP}/out",
        }
    good_log = {"reports/agent_logs/agent_f.md": b"# Agent F log\n"}
    extra: dict[str, dict[str, bytes]] = {
        "trailing_text_after_verdict": {
            **good_log,
            "reports/perf_investigation_x.md": b"VERDICT: FIXABLE (2 shapes)\n",
        },
        "lowercase_verdict": {**good_log, "reports/perf_investigation_x.md": b"verdict: fixable\n"},
        "bom_before_verdict": {
            **good_log,
            "reports/perf_investigation_x.md": b"\xef\xbb\xbfVERDICT: ALIGNED\n",
        },
        "nul_in_first_line": {**good_log, "reports/perf_investigation_x.md": b"VERDICT: ALI\0GNED\n"},
        "invalid_utf8_first_line": {**good_log, "reports/perf_investigation_x.md": b"VERDICT: ALIGNED\xff\n"},
        "no_final_newline": {**good_log, "reports/perf_investigation_x.md": b"VERDICT: BLOCKED"},
        "verdict_on_second_line": {
            **good_log,
            "reports/perf_investigation_x.md": b"# title\nVERDICT: ALIGNED\n",
        },
        "empty_agent_log": {
            "reports/perf_investigation_x.md": b"VERDICT: ALIGNED\n",
            "reports/agent_logs/agent_f.md": b"",
        },
        "agent_log_is_dir": {
            "reports/perf_investigation_x.md": b"VERDICT: ALIGNED\n",
            "reports/agent_logs/agent_f.md/inner": b"x",
        },
        "wrong_extension_ignored": {**good_log, "reports/perf_investigation_x.txt": b"VERDICT: ALIGNED\n"},
        "sort_order_upper_lower": {
            **good_log,
            "reports/perf_investigation_b.md": b"VERDICT: ALIGNED\n",
            "reports/perf_investigation_B.md": b"VERDICT: nope\n",
            "reports/perf_investigation__.md": b"VERDICT: FIXABLE\n",
        },
    }
    for name, fs in extra.items():
        yield {
            "name": name,
            "origin": "SYNTHETIC edge case",
            "files": files_spec(fs, "out/softmax/"),
            "args": ["softmax"],
            "env_root": "{TMP}/out",
        }
    for kernel in ("my kernel", "two  spaces", "k\u00e9rnel"):  # `basename $f` is unquoted in the script
        yield {
            "name": f"kernel_name:{kernel}",
            "origin": "SYNTHETIC kernel-name edge case (F_CASES several)",
            "files": files_spec(TV.F_CASES["several"], f"out/{kernel}/"),
            "args": [kernel],
            "env_root": "{TMP}/out",
        }
    for kernel, launches, ir in (
        ("rms_norm_hotpath", "hotpath_16384x2048.launches.json", False),
        ("rms_norm", "rms_norm_16384x2048.launches.json", True),
    ):
        files = _planned_f(kernel, launches, ir)
        yield {
            "name": f"planned:{kernel}",
            "origin": "REAL H200 fixtures (tests/fixtures/e/real, f, ir) through "
            "`cutile-workbench report f --yes`",
            "files": files_spec(files, f"out/{kernel}/"),
            "args": [kernel],
            "env_root": "{TMP}/out",
        }
        first = sorted(k for k in files if k.startswith("reports/perf_investigation_"))[0]
        bad = {**files, first: files[first].replace(b"VERDICT: ", b"VERDICT:  ", 1)}
        yield {
            "name": f"planned:{kernel}+double_space_verdict",
            "origin": "REAL planner output + SYNTHETIC edit",
            "files": files_spec(bad, f"out/{kernel}/"),
            "args": [kernel],
            "env_root": "{TMP}/out",
        }


# --------------------------------------------------------------------------- diff_ir.sh


def _ir_sources() -> list[str]:
    """Distinct real/fixture IR files (by content), repo-relative."""
    seen: dict[str, str] = {}
    for g in (
        "tests/fixtures/ir/*.mlir",
        "cutile_workbench/profiles/*/session/*/reference/reference.mlir",
        "cutile_workbench/profiles/*/session/*/generated/generated_canon.mlir",
        "cutile_workbench/profiles/*/session/*/workbench/tileir/*.tileir",
    ):
        for p in sorted(REPO.glob(g)):
            seen.setdefault(_sha(p.read_bytes()), p.relative_to(REPO).as_posix())
    return list(seen.values())


def _ir_case(name: str, origin: str, ref: bytes | dict[str, str], gen: bytes | dict[str, str]) -> Case:
    return {
        "name": name,
        "origin": origin,
        "files": {"ref.mlir": ref, "gen.mlir": gen},
        "args": ["{TMP}/ref.mlir", "{TMP}/gen.mlir"],
    }


def diff_ir_cases() -> Iterator[Case]:
    fixtures = sorted(p.relative_to(REPO).as_posix() for p in (TESTS / "fixtures/ir").glob("*.mlir"))
    for a in fixtures:
        for b in fixtures:
            yield _ir_case(
                f"fixture:{Path(a).stem}|{Path(b).stem}",
                "fixtures in tests/fixtures/ir (README there says which are REAL/SYNTHETIC)",
                repo_file(a),
                repo_file(b),
            )
    sessions = sorted(REPO.glob("cutile_workbench/profiles/*/session/*/reference/reference.mlir"))
    for ref in sessions:
        for gen_dir in sessions:
            gen = gen_dir.parent.parent / "generated" / "generated_canon.mlir"
            yield _ir_case(
                f"h200:{ref.parent.parent.name}.ref|{gen.parent.parent.name}.gen",
                "REAL H200 Tile IR dumps recorded under cutile_workbench/profiles/*/session/*",
                repo_file(ref.relative_to(REPO).as_posix()),
                repo_file(gen.relative_to(REPO).as_posix()),
            )
            if ref.parent.parent == gen_dir.parent.parent:
                yield _ir_case(
                    f"h200:{ref.parent.parent.name}.gen|ref (swapped)",
                    "REAL H200 dumps, swapped",
                    repo_file(gen.relative_to(REPO).as_posix()),
                    repo_file(ref.relative_to(REPO).as_posix()),
                )
    # distinct raw .tileir dumps of the H200 sessions, each against the next one (kernel and config
    # variants: rms_norm tile sizes, softmax persistent vs row kernels)
    tileir = [s for s in _ir_sources() if s.endswith(".tileir")]
    for a, b in zip(tileir, tileir[1:] + tileir[:1], strict=True):
        yield _ir_case(
            f"h200-dump:{Path(a).name}|{Path(b).name}",
            "REAL H200 raw .tileir dumps (distinct contents)",
            repo_file(a),
            repo_file(b),
        )
    # SYNTHETIC edits. Real H200 dumps carry scalar assume_div_by, so any pair of them is critical;
    # the note-only outcomes (exit 2) are edits of the synthetic softmax fixture against itself.
    base_rel = "cutile_workbench/profiles/rms_norm/session/rms_norm/generated/generated_canon.mlir"
    ref_rel = "cutile_workbench/profiles/rms_norm/session/rms_norm/reference/reference.mlir"
    syn_rel = "tests/fixtures/ir/synthetic_softmax_cpp.mlir"
    text, syn = (REPO / base_rel).read_text(), (REPO / syn_rel).read_text()
    lines = text.splitlines(keepends=True)
    tail = "  return\n}\n"
    assert syn.count(tail) == 1

    def add(body: str) -> str:  # insert ops before the synthetic kernel's return
        return syn.replace(tail, body + tail)

    edits: dict[str, tuple[str, str, str]] = {
        "real:self": (base_rel, text, text),
        "real:crlf_gen": (base_rel, text, text.replace("\n", "\r\n")),
        "real:no_final_newline": (base_rel, text, text.rstrip("\n")),
        "real:bf16_to_f16": (base_rel, text, text.replace("bf16", "f16")),
        "real:drop_reduce_identity": (
            base_rel,
            text,
            text.replace("identities=[0.000000e+00", "identities=[1.0", 1),
        ),
        "real:tabs_for_spaces": (base_rel, text, text.replace("  ", "\t")),
        "real:unicode_comment": (base_rel, text, text + "// \u2713 16\u00d71024 \u2014 done\n"),
        "real:vs_reference_first_half": (
            base_rel,
            (REPO / ref_rel).read_text(),
            "".join(lines[: len(lines) // 2]),
        ),
        "syn:self": (syn_rel, syn, syn),
        "syn:crlf_both": (syn_rel, syn.replace("\n", "\r\n"), syn.replace("\n", "\r\n")),
        "syn:extra_two_addf": (
            syn_rel,
            syn,
            add("  %q1 = addf %2, %2 : tile<1x1024xf32>\n  %q2 = addf %2, %2 : tile<1x1024xf32>\n"),
        ),
        "syn:one_fewer_mulf_three": (
            syn_rel,
            add("".join(f"  %m{i} = mulf %2, %2 : tile<1x1024xf32>\n" for i in range(3))),
            syn,
        ),
        "syn:no_ptr_assume": (
            syn_rel,
            syn,
            syn.replace("  %assume = assume div_by<16>, %arg0 : tile<ptr<f16>>\n", ""),
        ),
        "syn:extra_latency_hint": (
            syn_rel,
            syn,
            add(
                "  %h = load_view_tko weak %pview[%blockId_x] token = %0 "
                "optimization_hints = <sm_90 = {latency = 5}> : tile<1x1024xf16>\n"
            ),
        ),
        "syn:allow_tma_false_only_in_gen": (
            syn_rel,
            syn,
            syn.replace("{latency = 3}", "{latency = 3, allow_tma = false}"),
        ),
        "syn:allow_tma_true_only_in_ref": (
            syn_rel,
            syn.replace("{latency = 3}", "{latency = 3, allow_tma = true}"),
            syn,
        ),
        "syn:extra_rounding_mode": (syn_rel, syn, add("  // rounding_mode\n")),
        "syn:swizzle_only_in_ref": (syn_rel, add("  %s = divi %blockId_x, %cst_1_i32 : tile<i32>\n"), syn),
        "syn:occupancy_missing_in_gen": (syn_rel, syn, syn.replace("{occupancy = 2}", "{}")),
        "syn:occupancy_differs": (syn_rel, syn, syn.replace("{occupancy = 2}", "{occupancy = 1}")),
        "syn:bf16_only_in_ref": (syn_rel, add("  // bf16\n"), syn),
        "syn:layout_differs": (syn_rel, syn, syn.replace("strides = [%arg2, 1]", "strides = [1, %arg2]")),
        "syn:ftz_dropped": (syn_rel, syn, syn.replace("exp2 %2 flush_to_zero", "exp2 %2")),
    }
    for name, (base, ref_text, gen_text) in edits.items():
        yield _ir_case(
            f"edit:{name}",
            f"SYNTHETIC edit of {base}",
            spec_for(ref_text.encode()),
            spec_for(gen_text.encode()),
        )
    # hand-written pairs from tests/unit/test_ir_audit.py (workaround-only: PASS_WITH_NOTES)
    small_ref = "entry @k() {\n  %a = addf %x, %y : tile<4xf32>\n}\n"
    small_gen = "entry @k() {\n  %a = addf %x, %y : tile<4xf32>\n  %b = addf %a, %y : tile<4xf32>\n}\n"
    yield _ir_case(
        "small:workaround_only",
        "SYNTHETIC (tests/unit/test_ir_audit.py)",
        small_ref.encode(),
        small_gen.encode(),
    )
    # SYNTHETIC seeded mutations, the generator of tests/unit/test_ir_audit.py::test_parity_on_seeded_mutations
    sources = [TI.grep_lines((REPO / s).read_text()) for s in _ir_sources()[:8]]
    rnd = random.Random(20261130)
    for i in range(12):
        a, b = TI._mutate(rnd.choice(sources), rnd), TI._mutate(rnd.choice(sources), rnd)
        eol = "\r\n" if i % 4 == 0 else "\n"
        yield _ir_case(
            f"mutation:{i}",
            "SYNTHETIC seeded mutation (tests/unit/test_ir_audit.py _mutate)",
            ("\n".join(a) + ("\n" if i % 3 else "")).encode(),
            (eol.join(b) + eol).encode(),
        )


# --------------------------------------------------------------------------- driver

BUILDERS = {
    "validate_perf_log.sh": perf_cases,
    "validate_agent_e.sh": agent_e_cases,
    "validate_agent_f.sh": agent_f_cases,
    "diff_ir.sh": diff_ir_cases,
}


def _materialize_raw(case: Case, root: Path) -> None:
    root.mkdir(parents=True)
    for rel in case.get("dirs", []):
        (root / rel).mkdir(parents=True, exist_ok=True)
    for rel, spec in case["files"].items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(spec if isinstance(spec, bytes) else (REPO / spec["repo"]).read_bytes())


def _twin_accepts(script: str, case: Case) -> bool:
    """diff_ir: our loader refuses non-kernel text (no ``entry @``, empty, NUL) with InputError by
    design (CLI exit 2), so such pairs are no parity target and are not recorded."""
    if script != "diff_ir.sh":
        return True
    from cutile_workbench.errors import InputError
    from cutile_workbench.ir.loader import read_ir_text

    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "case"
        _materialize_raw(case, root)
        try:
            for a in case["args"]:
                read_ir_text(G.expand(a, root))
        except InputError as exc:
            print(f"  skipped {case['name']}: twin loader refuses it: {exc}")
            return False
    return True


def record(script: str, scripts_dir: Path) -> list[Case]:
    """Run the real script on every case; stdout kept as raw bytes until :func:`encode`."""
    cases = []
    for case in BUILDERS[script]():
        if not _twin_accepts(script, case):
            continue
        with tempfile.TemporaryDirectory(prefix="golden-") as d:
            root = Path(d) / "case"
            _materialize_raw(case, root)
            out, rc = G.run_real(script, case, root, scripts_dir)
        case["stdout"], case["exit_code"] = out, rc
        cases.append(case)
    return cases


def encode(cases: list[Case]) -> tuple[dict[str, Any], list[Case]]:
    """Bytes → JSON specs: small UTF-8 inline as ``text``; the rest zlib+base64 against one preset
    dictionary (the first large stdout + the first large input: outputs and inputs repeat a lot
    between cases), and identical large contents stored once under ``blobs``."""
    large = [
        v
        for c in cases
        for v in (c["stdout"], *c["files"].values())
        if isinstance(v, bytes) and len(v) > INLINE_LIMIT
    ]
    sample_out = next((c["stdout"] for c in cases if len(c["stdout"]) > INLINE_LIMIT), b"")
    sample_in = next((v for v in large if v is not sample_out), b"")
    zdict = (sample_in[:16384] + sample_out[:16384])[-32768:]
    blobs: dict[str, dict[str, str]] = {}

    def z(data: bytes, dictionary: bytes) -> str:
        c = zlib.compressobj(9, zdict=dictionary) if dictionary else zlib.compressobj(9)
        return base64.b64encode(c.compress(data) + c.flush()).decode("ascii")

    def spec(v: bytes | dict[str, str]) -> dict[str, str]:
        if not isinstance(v, bytes):
            return v
        if len(v) <= INLINE_LIMIT and b"\0" not in v:
            try:
                return {"text": v.decode("utf-8")}
            except UnicodeDecodeError:
                pass
        key = _sha(v)[:SHA_CHARS]
        blobs.setdefault(key, {"zb64": z(v, zdict)})
        return {"blob": key}

    out = []
    for c in cases:
        e = dict(c)
        e["files"] = {rel: spec(v) for rel, v in c["files"].items()}
        e["stdout"] = spec(c["stdout"])
        out.append(e)
    return {"zdict_zb64": z(zdict, b""), "blobs": blobs}, out


def check_twins(script: str, doc: dict[str, Any]) -> list[str]:
    """Rebuild every case from the *encoded* doc (as the test does) and compare our twin."""
    problems = []
    for case in doc["cases"]:
        with tempfile.TemporaryDirectory(prefix="golden-") as d:
            root = Path(d) / "case"
            G.materialize(case, root, doc)
            try:
                problem = G.mismatch(case, G.run_twin(script, case, root), doc)
            except Exception as exc:  # the twin crashing is itself a finding to report
                problem = f"twin raised {type(exc).__name__}: {exc}"
        if problem:
            problems.append(f"{script} {case['name']}: {problem}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilegym", type=Path, default=REPO / ".fetched" / "TileGym")
    ap.add_argument("--check", action="store_true", help="compare only, write nothing")
    ap.add_argument("--commit", default="75a1430", help="TileGym commit of a snapshot without .git")
    args = ap.parse_args(argv)
    scripts_dir = args.tilegym / SKILL_SCRIPTS
    if not (scripts_dir / "validate_agent_e.sh").is_file():
        print(f"error: no TileGym skill scripts under {scripts_dir}", file=sys.stderr)
        return 2
    # the snapshot is a plain tree (no .git): its commit comes from the contract (§0) unless given
    commit = args.commit
    if (args.tilegym / ".git").exists():
        commit = subprocess.run(
            ["git", "-C", str(args.tilegym), "rev-parse", "--short=7", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    all_problems: list[str] = []
    total = 0
    for script in G.SCRIPT_NAMES:
        shared, cases = encode(record(script, scripts_dir))
        doc = {
            "script": script,
            "tilegym_commit": commit,
            "script_sha256": _sha((scripts_dir / script).read_bytes()),
            "recorded_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "run_as": f"bash <scripts>/{script} <args>, env PATH + LC_ALL={G.LOCALES[script]}"
            + (" + CUTILE_KERNEL_OUT_ROOT=<env_root>" if script.startswith("validate_agent") else ""),
            "placeholder": "{TMP} = the per-case temp directory, in args, env_root and stdout",
            **shared,
            "cases": cases,
        }
        problems = check_twins(script, doc)
        all_problems += problems
        text = json.dumps(doc, indent=0, ensure_ascii=False) + "\n"
        total += len(text.encode())
        print(
            f"{script}: {len(cases)} cases, {len(problems)} twin mismatch(es), {len(text.encode()) / 1024:.1f} KiB"
        )
        if not args.check:
            G.golden_path(script).write_text(text, encoding="utf-8")
    print(f"total {total / 1024:.1f} KiB")
    for p in all_problems:
        print("MISMATCH", p)
    return 1 if all_problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
