"""Producer: schedule jobs, enqueue the same id twice, inspect, reschedule and cancel."""

import streamdelay as sd

queue = sd.Queue("orders")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0

# Close order 42 in 2 seconds unless it is paid by then. The id makes the call idempotent.
result = queue.enqueue("order.close", {"order_id": 42}, delay=2, id="close-42")
print(f"enqueued {result.id}: created={result.created}, state={result.state}")

again = queue.enqueue("order.close", {"order_id": 42}, delay=2, id="close-42")
print(f"enqueued {again.id} again: created={again.created} (nothing changed)")

info = queue.get("close-42")
assert info is not None
print(f"get {info.id}: state={info.state}, body={info.body}, "
      f"due {(info.due - info.created) / 1000:g}s after it was created")

# Several jobs in one round trip.
results = queue.enqueue_many([
    sd.JobSpec("order.close", {"order_id": n}, delay=1, id=f"close-{n}") for n in (43, 44)
])
print("enqueue_many:", [(r.id, r.created) for r in results])

print("reschedule close-44 to 3s from now:", queue.reschedule("close-44", delay=3))
print("cancel close-43 (it was paid):", queue.cancel("close-43"))
print("cancel close-43 again:", queue.cancel("close-43"))

topic = queue.stats().topics["order.close"]
print(f"stats: delayed={topic.delayed}, ready={topic.ready}, reserved={topic.reserved}")
queue.close()
