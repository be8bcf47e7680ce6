"""Failures: automatic retries with backoff, Retry(delay=...), Drop, dead letters and replay."""

from collections import defaultdict

import streamdelay as sd

# Short delays so the example finishes quickly; real schedules look like [60, 300, 3600].
queue = sd.Queue("webhooks", backoff=[0.1, 0.2], max_attempts=5)
queue.enqueue("webhook.send", {"url": "https://example.com/a", "fails": 2}, id="flaky-1")
queue.enqueue("webhook.send", {"url": "https://example.com/b", "fails": 99}, id="doomed-1",
              max_attempts=3)
queue.enqueue("webhook.send", {"url": "https://example.com/c", "busy": True}, id="busy-1")
queue.enqueue("webhook.send", {"url": "", "fails": 0}, id="invalid-1")

runs: defaultdict[str, list[int]] = defaultdict(list)
worker = sd.Worker(queue, group="senders")


@worker.handler("webhook.send")
async def send(job: sd.Job) -> None:
    """Fail, ask for a retry or drop the job, depending on the body."""
    runs[job.id].append(job.attempt)
    if not job.body["url"]:
        raise sd.Drop()  # acknowledged, never retried
    if job.body.get("busy") and job.attempt == 1:
        raise sd.Retry(delay=0.3, reason="rate limited")  # this exact delay, counts as attempt
    if job.attempt <= job.body.get("fails", 0):
        raise RuntimeError(f"{job.body['url']} answered 503")  # retried after the backoff


worker.run(until_idle=True)
for job_id in sorted(runs):
    print(f"{job_id}: ran on attempts {runs[job_id]}")

for dead in queue.dead_list():
    print(f"dead: {dead.id} after {dead.attempts} attempts: {dead.error.splitlines()[0]}")
info = queue.get("doomed-1")
assert info is not None
print(f"get doomed-1: state={info.state}, attempts={info.attempts}")

# Once the endpoint is fixed: put dead jobs back as new (attempts reset to 0).
print("replayed:", queue.dead_replay(topic="webhook.send"))
replayed = queue.get("doomed-1")
assert replayed is not None
print(f"get doomed-1: state={replayed.state}, attempts={replayed.attempts}")
queue.cancel("doomed-1")
queue.close()
