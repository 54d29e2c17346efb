"""Read ``benchmark`` records from a pytest ``--junitxml`` file (contract §3.3) into a ``PerfLog``.

Contract: ``parse_junit_xml(path, *, strict=False, extra_tokens=()) -> PerfLog`` with the same
record validation, notes and ``InputError`` rules as :func:`cutile_workbench.artifacts.perflog.parser.parse_perf_log`
(the value of ``<property name="benchmark" value="{repr}">`` is read with ``ast.literal_eval``).
The XML is parsed with expat (the parser under ``xml.etree``) *defused*: any DOCTYPE, entity
declaration or external entity is refused (billion-laughs / XXE), so only plain junit parses.
Nodeids are rebuilt as ``file::Class::name`` from the ``file`` attribute (xunit1), else from
``classname`` (dotted module path, then the ``Test…`` classes); skipped/failed/error test cases
become ``PerfLog.outcomes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat

from cutile_workbench.artifacts.perflog import parser as _p
from cutile_workbench.artifacts.perflog.printer import is_benchmark_record, select_framework
from cutile_workbench.errors import InputError
from cutile_workbench.model import PerfLog


class _Refused(Exception):
    pass


@dataclass
class _Case:
    line: int
    nodeid: str
    benchmark_text: str | None = None
    outcome: str = "passed"
    reason: str = ""
    props: dict[str, str] = field(default_factory=dict)


def nodeid_from_case(attrs: dict[str, str]) -> str:
    """``file::Class::name`` (xunit1 ``file``) or from the dotted ``classname`` (xunit2)."""
    name = attrs.get("name", "")
    classname = attrs.get("classname", "")
    parts = [p for p in classname.split(".") if p]
    classes: list[str] = []
    while parts and parts[-1][:1].isupper():  # trailing "Test…" components are classes
        classes.insert(0, parts.pop())
    path = attrs.get("file") or ("/".join(parts) + ".py" if parts else "")
    return "::".join([p for p in (path, *classes, name) if p])


def parse_junit_xml(
    path: Path | str,
    *,
    text: str | bytes | None = None,
    strict: bool = False,
    extra_tokens: tuple[str, ...] = (),
) -> PerfLog:
    src = str(path)
    if text is None:
        try:
            data: bytes = Path(src).read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read junit XML: {exc.strerror or exc}", path=src) from None
    else:
        data = text.encode("utf-8") if isinstance(text, str) else text
    if not data.strip():
        raise InputError("junit XML is empty", path=src)

    cases: list[_Case] = []
    stack: list[str] = []
    current: list[_Case] = []
    xp = expat.ParserCreate()

    def refuse_doctype(_name: str, _sysid: str | None, _pubid: str | None, _internal: bool) -> None:
        raise _Refused

    def refuse_entity(*_args: Any) -> None:
        raise _Refused

    def refuse_external(_ctx: str, _base: str | None, _sysid: str | None, _pubid: str | None) -> int:
        raise _Refused

    def start(tag: str, attrs: dict[str, str]) -> None:
        stack.append(tag)
        if tag == "testcase":
            current.append(_Case(line=xp.CurrentLineNumber, nodeid=nodeid_from_case(attrs)))
        elif current and tag == "property" and "properties" in stack[-2:-1]:
            current[-1].props[attrs.get("name", "")] = attrs.get("value", "")
            if attrs.get("name") == "benchmark":
                current[-1].benchmark_text = attrs.get("value", "")
        elif current and tag in ("failure", "error", "skipped"):
            case = current[-1]
            outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
            if _p._RANK[outcome] > _p._RANK.get(case.outcome, 0):
                case.outcome, case.reason = outcome, attrs.get("message", "")

    def end(tag: str) -> None:
        if stack:
            stack.pop()
        if tag == "testcase" and current:
            cases.append(current.pop())

    xp.StartElementHandler = start
    xp.EndElementHandler = end
    xp.StartDoctypeDeclHandler = refuse_doctype
    xp.EntityDeclHandler = refuse_entity
    xp.ExternalEntityRefHandler = refuse_external
    xp.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        xp.Parse(data, True)
    except _Refused:
        raise InputError(
            "junit XML with a DOCTYPE or entity declaration refused (unsafe XML)",
            path=src,
            line=xp.CurrentLineNumber,
        ) from None
    except expat.ExpatError as exc:
        raise InputError(
            f"malformed junit XML: {expat.ErrorString(exc.code)}", path=src, line=exc.lineno
        ) from None
    except RecursionError:
        raise InputError("junit XML nested too deeply", path=src) from None
    except LookupError as exc:  # expat: an XML declaration naming an unknown encoding
        raise InputError(f"malformed junit XML: {exc}", path=src, line=1) from None

    log = PerfLog(path=src)
    st = _p._State(path=src, strict=strict, extra_tokens=tuple(extra_tokens), log=log)
    for case in cases:
        if case.outcome != "passed":
            st.outcomes[case.nodeid] = (case.outcome, case.reason, case.line)
            continue
        if case.benchmark_text is None:
            st.outcomes[case.nodeid] = ("passed", "passed without a 'benchmark' property", case.line)
            continue
        st.outcomes[case.nodeid] = ("passed", "", case.line)
        _record(st, case)
    _p._finalize_outcomes(st)
    if not cases:
        st.problem("no <testcase> elements (not a pytest junit XML?)", None)
    return log


def _record(st: _p._State, case: _Case) -> None:
    text = case.benchmark_text or ""
    if len(text) > _p.MAX_LINE_CHARS:
        st.problem("benchmark property too long", case.line, key=case.nodeid)
        return
    try:
        value = _p.literal_eval_repr(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        st.problem("benchmark property is not a Python literal", case.line, key=case.nodeid)
        return
    if not is_benchmark_record(value):
        st.problem("benchmark property is not {framework: {phase: stats}}", case.line, key=case.nodeid)
        return
    framework = select_framework(case.nodeid, value)
    _p._add_record(st, case.nodeid, framework, value[framework], case.line, case.line)


__all__ = ["nodeid_from_case", "parse_junit_xml"]
