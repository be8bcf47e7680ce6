"""An HTTP consumer of the nemesis run: plain HTTP against ``streamdelay serve``, reserving jobs
of topic ``http`` and acking each (the client of tests/system/chaos/http_client.py), every run
recorded in the history as the worker app records its handlers' (``start``, ``end``; the
``end`` note, outcome ``ok`` with the ``value`` it posts as the job's result, precedes the ack as
a worker's does, and an ``ack`` note says how the ack ended: ``acked``, ``stale`` or
``lost``). Its ``start`` says ``pull=True``: nothing heartbeats a reservation, so the job may
be handed to another consumer once this one is silent past its ttr (docs/pull.md), which the
checker allows.

``python -m tests.system.nemesis.http_consumer BASE TOKEN QUEUE OUT NAME``; runs until SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

from tests.system.chaos.http_client import ACK_RETRY_S, Client
from tests.system.nemesis.history import Recorder

TOPIC = "http"
POLL_WAIT_MS = 1000


def run(base: str, token: str, queue: str, out: Path, name: str) -> None:
    """Reserve, record, ack until SIGTERM."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client = Client(base, token, queue)
    record = Recorder(out, f"http-{name}-{os.getpid()}")
    who = f"http-{name}:{os.getpid()}"
    while not stop.is_set():
        try:
            status, answer = client.call(f"/topics/{TOPIC}:reserve", {
                "consumer": f"{name}-{os.getpid()}", "wait_ms": POLL_WAIT_MS, "count": 4})
        except (OSError, ValueError):  # serve is down (killed, or cut off from Redis)
            time.sleep(0.1)
            continue
        if status != 200:
            time.sleep(0.1 if status != 204 else 0)
            continue
        for delivery in answer["deliveries"]:
            record.note("start", delivery["id"], attempt=delivery["attempt"], worker=who,
                        topic=TOPIC, due_ms=delivery["due"], pull=True)
            value = value_of(delivery)
            record.note("end", delivery["id"], attempt=delivery["attempt"], worker=who,
                        outcome="ok", value=value, ack="sent")
            outcome = ack(client, delivery["receipt"], value)
            record.note("ack", delivery["id"], attempt=delivery["attempt"], worker=who,
                        ack=outcome)


def value_of(delivery: dict[str, object]) -> object:
    """The result an HTTP consumer posts with its ack: three times the body's ``n`` (the
    producer awaits it over HTTP and the checker compares, docs/reliability.md#make-nemesis)."""
    body = delivery.get("body")
    return int(body["n"]) * 3 if isinstance(body, dict) and "n" in body else None


def ack(client: Client, receipt: str, value: object) -> str:
    """``:ack`` with ``{"result": value}``: ``acked``, ``stale`` (409) or ``lost`` (no answer
    for 10 s), retried while ``serve`` is down or cut off."""
    deadline = time.monotonic() + ACK_RETRY_S
    while time.monotonic() < deadline:
        try:
            status, _ = client.call(f"/deliveries/{receipt}:ack", {"result": value})
        except (OSError, ValueError):
            time.sleep(0.1)
            continue
        if status == 200:
            return "acked"
        if status == 409:
            return "stale"
        time.sleep(0.1)
    return "lost"


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), sys.argv[5])
