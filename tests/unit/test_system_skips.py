"""The tests needing Chromium or pdflatex: one summary line when they skip, a failure in CI."""

import pytest

pytest_plugins = ["pytester"]

TESTS = """
import pytest

@pytest.mark.skipif(True, reason="no browser: no chromium browser (apt-get install chromium)")
@pytest.mark.parametrize("i", range(3))
def test_page(i):
    pass

@pytest.mark.skipif(True, reason="pdflatex not installed")
def test_latex():
    pass

@pytest.mark.skipif(True, reason="something else")
def test_other():
    pass
"""


@pytest.fixture
def suite(pytester):
    pytester.makeconftest(
        "from tests.system_skips import pytest_runtest_makereport, pytest_terminal_summary"
    )
    pytester.makepyfile(test_x=TESTS)
    return pytester


def test_skips_are_named_in_one_line_each(suite, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = suite.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=5)
    lines = [line for line in result.outlines if line.startswith("SKIPPED ")]
    assert lines == [
        "SKIPPED 1 LaTeX compile test (pdflatex with booktabs and rotating): "
        "pdflatex not installed",
        "SKIPPED 3 browser tests (Chromium, chromedriver and selenium): no browser: no chromium "
        "browser (apt-get install chromium)",
    ]


@pytest.mark.parametrize("value", ["true", "1", "yes"])
def test_in_ci_those_skips_fail(suite, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    result = suite.runpytest("-q", "-p", "no:cacheprovider")
    # reported at setup, so as errors; the unrelated skip stays a skip
    result.assert_outcomes(errors=4, skipped=1)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*CI is set and the browser tests*skipped*.ci/run must install*"])


def test_ci_false_is_not_ci(suite, monkeypatch):
    monkeypatch.setenv("CI", "false")
    suite.runpytest("-q", "-p", "no:cacheprovider").assert_outcomes(skipped=5)
