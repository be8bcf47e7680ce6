"""docs/examples/job_options.py runs and prints what docs/producer.md shows
(docs/producer.md#priorities-keys-and-expiry)."""

from __future__ import annotations

import pytest

from tests.system.test_docs_examples import example_env, run_example

pytestmark = pytest.mark.timeout(120)
__all__ = ["example_env"]  # the fixture, used by name


def test_job_options_example(example_env: dict[str, str]) -> None:
    out = run_example("job_options.py", example_env).splitlines()
    assert out == [
        "enqueued {tenant-42}invoice-7",
        "get: priority=9, key=tenant-42, expires 600s after its due time",
        "enqueue_many ids start with: ['{tenant-7}', '{tenant-7}']",
        "a job without options: priority=5, key=None, expires_at=None",
        "refused: field=priority",
    ]
