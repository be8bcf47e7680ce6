"""Job options: a priority, a fairness key and an expiry per job (the producer side)."""

import streamdelay as sd

queue = sd.Queue("tenants")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0

# A keyed job's id carries its key: {tenant-42}invoice-7. Use the id the call returns.
urgent = queue.enqueue("report.build", {"report": 7}, id="invoice-7", key="tenant-42",
                       priority=9, expires=600, delay=5)
print(f"enqueued {urgent.id}")

info = queue.get(urgent.id)
assert info is not None
print(f"get: priority={info.priority}, key={info.key}, "
      f"expires {(info.expires_at - info.due) // 1000}s after its due time")

# JobSpec takes the same options, so enqueue_many carries them.
results = queue.enqueue_many([
    sd.JobSpec("report.build", {"report": n}, key="tenant-7", priority=2) for n in (1, 2)
] + [sd.JobSpec("report.build", {"report": 3})])
print("enqueue_many ids start with:", [r.id[:len("{tenant-7}")] for r in results[:2]])

plain = queue.get(results[2].id)
assert plain is not None
print(f"a job without options: priority={plain.priority}, key={plain.key}, "
      f"expires_at={plain.expires_at}")

try:
    queue.enqueue("report.build", {}, priority=10)
except sd.ValidationError as exc:
    print(f"refused: field={exc.field}")
