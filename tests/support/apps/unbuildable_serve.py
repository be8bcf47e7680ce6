"""``streamdelay serve`` with one injected fault: on the topic ``unbuildable`` the step that
encodes a reserve's answer raises (not as a body JSON cannot carry: a fault of the service),
after the jobs were taken and before the answer is sent, so a test sees what the service does
with jobs whose answer cannot be built (tests/system/test_web_handover.py). Every other topic
is served as usual.

Usage: ``python -m tests.support.apps.unbuildable_serve serve --url ... --queue ...``.
"""

from __future__ import annotations

from typing import Any

from streamdelay.cli import main
from streamdelay.web.api import handover

FAULTY_TOPIC = "unbuildable"
_encoder = handover._encoder


class _Failing:
    """The answer's encoder, failing on the faulty topic's deliveries."""

    def encode(self, delivery: Any) -> bytes:
        if delivery.topic == FAULTY_TOPIC:
            raise RuntimeError("injected fault: the reserve answer cannot be built")
        return _encoder.encode(delivery)


handover._encoder = _Failing()  # type: ignore[assignment]

if __name__ == "__main__":
    main()
