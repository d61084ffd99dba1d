"""scripts/slowest_tests.py reads pytest's JUnit XML report: tests, files and folders by their time
(a hand-written report: nothing is run and nothing timed)."""

from __future__ import annotations

from scripts import slowest_tests

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.server.test_a" name="test_one" time="2.5"/>
<testcase classname="tests.server.test_a" name="test_two[x]" time="1.0"><failure message="no"/></testcase>
<testcase classname="tests.ui.test_b" name="test_three" time="3.0"/>
<testcase classname="tests.ui.test_b" name="test_four" time="0.5"><skipped message="no chromium"/></testcase>
</testsuite></testsuites>"""


def test_tests_files_and_folders_by_time(tmp_path, capsys):
    report = tmp_path / "junit.xml"
    report.write_text(REPORT, encoding="utf-8")
    rows = slowest_tests.read_report(report)
    assert ("tests/server/test_a.py::test_two[x]", 1.0, "failure") in rows and len(rows) == 4
    assert sorted(slowest_tests.by_file(rows)) == [("tests/server/test_a.py", 3.5, "2 tests, 1 failed"),
                                                   ("tests/ui/test_b.py", 3.5, "2 tests, 0 failed")]
    assert slowest_tests.main(["--by-file", "-n", "1", "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "| 1 | 3.5 | 2 tests, 1 failed | tests/server/test_a.py |" in out and "test_b.py |" not in out.split("\n\n")[0]
    assert "| tests/server | 2 | 3.5 |" in out and "4 tests, 7 s of test time" in out
    assert slowest_tests.main(["-n", "2", "--report", str(report)]) == 0
    assert "| 1 | 3.0 | passed | tests/ui/test_b.py::test_three |" in capsys.readouterr().out
