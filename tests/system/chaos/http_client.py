"""An HTTP consumer process of the HTTP chaos run (tests/system/chaos/http_run.py): plain HTTP, as a
consumer in any language would write it.

Usage: ``python -m tests.system.chaos.http_client BASE_URL TOKEN QUEUE HISTORY_DIR SEED
HANGUP_RATE``.
It long-polls ``:reserve`` (up to 8 jobs, ``wait_ms`` 1500) until SIGTERM and acks each job
(the jobs of one answer side by side, in 8 threads);
a share ``HANGUP_RATE`` of its polls hangs up instead after 50 ms-1.5 s without reading an
answer. Each job it got is one JSON line ``{"id", "attempt", "due", "start", "pid", "intact",
"ack", "ack_at"}`` in ``HISTORY_DIR/worker-http-<pid>.jsonl`` (``ack``: ``acked`` (200),
``stale`` (409), ``lost`` (no answer for 10 s: ``serve`` down) or ``error: <exception>`` (an
ack that broke in a way this client does not expect), ``ack_at`` when that was known); each
hang-up one line in ``HISTORY_DIR/hangups-<pid>.jsonl``. Connection errors (a ``serve`` killed
and restarted, including an answer cut after its headers: ``http.client.IncompleteRead``) are
retried. Every delivery an answer carried is written, whatever its ack did: a job this process
got and did not write would count as lost (the run checks that no consumer exited before it
was stopped).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.system.chaos.app import job_id

ACK_RETRY_S = 10.0
POLL_WAIT_MS = 1500


class Client:
    """One consumer: its own connection per request, like a simple client in any language."""

    def __init__(self, base: str, token: str, queue: str) -> None:
        self.base, self.token, self.queue = base, token, queue
        self.consumer = f"chaos-{os.getpid()}"

    def call(self, path: str, body: Any = None, timeout: float = 10.0) -> tuple[int, Any]:
        """POST ``path`` under the queue; (status, JSON or None). Raises OSError when the
        service cannot be reached or the connection breaks."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base}/v1/queues/{self.queue}{path}", data=data, method="POST",
            headers={"Authorization": f"Bearer {self.token}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                payload = answer.read()
                return answer.status, json.loads(payload) if payload else None
        except urllib.error.HTTPError as exc:
            return exc.code, None
        except urllib.error.URLError as exc:
            raise OSError(str(exc)) from exc
        except http.client.HTTPException as exc:  # cut mid-answer: not an OSError
            raise OSError(f"{type(exc).__name__}: {exc}") from exc

    def ack(self, receipt: str) -> str:
        """``acked``, ``stale`` or ``lost``, retrying while the service is down."""
        deadline = time.monotonic() + ACK_RETRY_S
        while time.monotonic() < deadline:
            try:
                status, _ = self.call(f"/deliveries/{receipt}:ack")
            except (OSError, ValueError):
                time.sleep(0.1)
                continue
            if status == 200:
                return "acked"
            if status == 409:
                return "stale"
            time.sleep(0.1)  # 503 while Redis or the service starts: again
        return "lost"

    def hang_up(self, topic: str, rng: random.Random) -> tuple[float, float]:
        """A long poll that hangs up without reading; (start, end) in epoch ms."""
        body = json.dumps({"consumer": f"{self.consumer}-gone", "wait_ms": 5000,
                           "count": 5}).encode()
        where = urlsplit(self.base)
        start = time.time() * 1000
        try:
            with socket.create_connection((where.hostname, where.port or 80), timeout=5) as sock:
                sock.sendall(
                    f"POST /v1/queues/{self.queue}/topics/{topic}:reserve HTTP/1.1\r\n"
                    f"Host: chaos\r\nAuthorization: Bearer {self.token}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                    .encode() + body)
                time.sleep(rng.uniform(0.05, 1.5))
        except OSError:
            pass
        return start, time.time() * 1000


def run(base: str, token: str, queue: str, history: Path, seed: int, hangup_rate: float,
        topic: str = "chaos") -> None:
    """Consume until SIGTERM."""
    rng = random.Random(seed)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    client = Client(base, token, queue)
    pid = os.getpid()
    runs = (history / f"worker-http-{pid}.jsonl").open("a", buffering=1)
    hangups = (history / f"hangups-{pid}.jsonl").open("a", buffering=1)
    acks = ThreadPoolExecutor(8)  # the jobs of one answer are acked side by side

    def ack(delivery: dict[str, Any]) -> tuple[str, float]:
        try:
            outcome = client.ack(delivery["receipt"])
        except Exception as exc:  # written down: never lost with the process
            outcome = f"error: {type(exc).__name__}: {exc}"
        return outcome, time.time() * 1000

    while not stop.is_set():
        if rng.random() < hangup_rate:
            start, end = client.hang_up(topic, rng)
            hangups.write(json.dumps({"at": start, "end": end}) + "\n")
            continue
        try:
            status, answer = client.call(f"/topics/{topic}:reserve", {
                "consumer": client.consumer, "wait_ms": POLL_WAIT_MS, "count": 8})
        except (OSError, ValueError):  # the service is down, or the answer was cut
            time.sleep(0.1)
            continue
        if status != 200:
            if status != 204:
                time.sleep(0.1)
            continue
        start = time.time() * 1000  # every job of the answer starts now
        deliveries = answer["deliveries"]
        for delivery, (outcome, ack_at) in zip(deliveries, acks.map(ack, deliveries),
                                               strict=True):
            body = delivery["body"]
            intact = (isinstance(body, dict) and isinstance(body.get("n"), int)
                      and job_id(body["n"]) == delivery["id"] and set(body) == {"n"})
            runs.write(json.dumps({"id": delivery["id"], "attempt": delivery["attempt"],
                                   "due": delivery["due"], "start": start, "pid": pid,
                                   "intact": intact, "ack": outcome,
                                   "ack_at": ack_at}) + "\n")


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]), int(sys.argv[5]),
        float(sys.argv[6]))
