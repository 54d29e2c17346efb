"""parse_junit_xml on junit files written by real child pytest runs, and defused-XML refusals."""

from __future__ import annotations

import pytest
from perflog_helpers import load_suite_runner

from cutile_workbench.artifacts.perflog.junit import nodeid_from_case, parse_junit_xml
from cutile_workbench.artifacts.perflog.parser import parse_perf_log
from cutile_workbench.errors import InputError

R = load_suite_runner()


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_junit_records_equal_the_printed_records(family):
    run = R.run_suite(("-sv", "--print-record", "--junitxml=junit.xml", "-o", f"junit_family={family}"))
    xml_log = parse_junit_xml(run.workdir / "junit.xml", strict=True)
    text_log = parse_perf_log(run.workdir / "raw.log", strict=False)
    key = lambda r: (r.framework, r.row_key)  # noqa: E731
    assert sorted((key(r), r.raw) for r in xml_log.records) == sorted(
        (key(r), r.raw) for r in text_log.records
    )
    assert len(xml_log.records) == 9
    tri = next(r for r in xml_log.records if r.framework == "triton" and "262144" in r.params)
    assert tri.forward.median_ms == 0.34895899999999985  # contract §3.3, real H200 junit value
    outcomes = sorted((o.outcome, o.backend_token) for o in xml_log.outcomes)
    assert outcomes == [("failed", "cutile_rs")] + [("skipped", "cutile")] * 5
    failed = next(o for o in xml_log.outcomes if o.outcome == "failed")
    assert "Return code 5" in failed.reason and failed.source and failed.source.line > 0


def test_nodeid_from_case():
    assert (
        nodeid_from_case({"classname": "tests.ops.test_rms_norm.Test_RMSNorm", "name": "test_perf[x-1]"})
        == "tests/ops/test_rms_norm.py::Test_RMSNorm::test_perf[x-1]"
    )
    assert (
        nodeid_from_case({"classname": "test_a", "name": "test_b", "file": "sub/test_a.py"})
        == "sub/test_a.py::test_b"
    )


@pytest.mark.parametrize(
    ("xml", "fragment"),
    [
        ('<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaa">]><testsuites>&a;</testsuites>', "DOCTYPE"),
        ('<?xml version="1.0"?><!DOCTYPE t SYSTEM "file:///etc/passwd"><testsuites/>', "DOCTYPE"),
        ("<testsuites><testcase", "malformed"),
        ("", "empty"),
        ("<testsuites/>", "no <testcase>"),
    ],
)
def test_unsafe_or_bad_xml_is_refused(xml, fragment):
    with pytest.raises(InputError) as ei:
        parse_junit_xml("junit.xml", text=xml, strict=True)
    assert fragment in str(ei.value) and str(ei.value).startswith("junit.xml")


def test_bad_benchmark_property_strict_and_lenient():
    # synthetic: a property value that is not a Python literal, and a NaN median
    xml = (
        '<testsuites><testsuite><testcase classname="t.T" name="test_perf[triton-1]">'
        '<properties><property name="benchmark" value="{\'triton\': oops}"/></properties></testcase>'
        '<testcase classname="t.T" name="test_perf[triton-2]"><properties>'
        "<property name=\"benchmark\" value=\"{'triton': {'forward': {'median': nan}}}\"/>"
        "</properties></testcase></testsuite></testsuites>"
    )
    with pytest.raises(InputError) as ei:
        parse_junit_xml("j.xml", text=xml, strict=True)
    assert ei.value.line == 1 and ei.value.key == "t.py::T::test_perf[triton-1]"
    lenient = parse_junit_xml("j.xml", text=xml)
    assert lenient.records == [] and len(lenient.notes) == 2
    assert "not a Python literal" in lenient.notes[0] and "finite" in lenient.notes[1]
    assert {o.outcome for o in lenient.outcomes} == {"passed_no_record"}
