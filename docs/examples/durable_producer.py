"""Durable producer: replicas=1, and what to do with NotDurable (retry with the same ids).

Run against a Redis with a replica, every call answers once the replica has it. Run against a
Redis without one (as the docs test does), every call that changes a job raises NotDurable
after replica_timeout: written on the primary, not confirmed. Retrying is safe by id.
"""

import time

import streamdelay as sd

queue = sd.Queue("payments", replicas=1, replica_timeout=0.2)  # URL from STREAMDELAY_URL


def enqueue_durably(job_id: str, body: dict[str, object], attempts: int = 3) -> sd.EnqueueResult:
    """Enqueue until one replica confirmed it (or give up after ``attempts``)."""
    for attempt in range(1, attempts + 1):
        try:
            return queue.enqueue("payment.capture", body, id=job_id, delay=60)
        except sd.NotDurable as exc:
            print(f"attempt {attempt}: not durable ({exc.acked} of {exc.replicas} replicas), "
                  f"jobs {list(exc.job_ids)}")
            time.sleep(0.1)
    raise RuntimeError(f"{job_id}: no replica confirmed it; it is written on the primary only")


try:
    result = enqueue_durably("capture-7", {"payment": 7})
    print(f"confirmed by a replica: {result.id} created={result.created}")
except RuntimeError as exc:
    print(exc)

# Reads never wait; the job was written each time, and only once (same id).
info = queue.get("capture-7")
print(f"get capture-7: state={info.state if info else None}")
print(f"delayed jobs: {queue.stats().topics['payment.capture'].delayed}")
