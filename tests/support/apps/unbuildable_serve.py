"""``streamdelay serve`` with one injected fault: on the topic ``unbuildable`` the step that
records a reserve's lateness raises, after the jobs were taken and before the answer is sent,
so a test sees what the service does with jobs whose answer cannot be built
(tests/system/test_web_handover.py). Every other topic is served as usual.

Usage: ``python -m tests.support.apps.unbuildable_serve serve --url ... --queue ...``.
"""

from __future__ import annotations

from streamdelay.cli import main
from streamdelay.web.metrics import HttpMetrics

FAULTY_TOPIC = "unbuildable"
_reserved = HttpMetrics.reserved


def _failing(self: HttpMetrics, queue: str, topic: str, due_ms: int) -> float | None:
    if topic == FAULTY_TOPIC:
        raise RuntimeError("injected fault: the reserve answer cannot be built")
    return _reserved(self, queue, topic, due_ms)


HttpMetrics.reserved = _failing  # type: ignore[method-assign]

if __name__ == "__main__":
    main()
