"""A pytest plugin: a skipped test fails the run (a skip leaves a guarantee unchecked).

``make test`` installs every tool the suite uses (redis-server, redis-cli, openssl), so a test
that would skip for a missing tool or feature means the run did not check what it claims to.
``tests/conftest.py`` loads this plugin for the suite.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, Any, None]:
    """Turn a skip (not an expected failure) into a failure that names the skip's reason."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} was skipped ({reason}): the suite allows no skips, "
                           "a skipped test leaves a guarantee unchecked (`make test` installs "
                           "every tool it needs)")
