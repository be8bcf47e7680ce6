"""Worker: handlers (async def and def) run by a worker that stops once nothing is left to do."""

import streamdelay as sd

queue = sd.Queue("reminders")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0
queue.enqueue("reminder.email", {"to": "ada@example.com"}, delay=0.3, id="email-1")
queue.enqueue("reminder.sms", {"to": "+15550100"}, delay=0.6, id="sms-1")
queue.enqueue("reminder.email", {"to": "alan@example.com"}, delay=0.9, id="email-2",
              headers={"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})

worker = sd.Worker(queue, group="notifier", concurrency=4)


@worker.handler("reminder.email")
async def send_email(job: sd.Job) -> None:
    """An async handler runs on the worker's event loop: await, never block."""
    trace = " (traced)" if "traceparent" in job.headers else ""
    print(f"email to {job.body['to']}, job {job.id}, attempt {job.attempt}{trace}", flush=True)


@worker.handler("reminder.sms")
def send_sms(job: sd.Job) -> None:
    """A plain def handler runs in a thread of the worker: blocking calls are fine here."""
    print(f"sms to {job.body['to']}, job {job.id}, attempt {job.attempt}", flush=True)


# until_idle: return when these topics have nothing delayed, ready or running (tests, scripts,
# cron-style batch runs). A service calls worker.run() instead and stops on SIGTERM.
worker.run(until_idle=True)
print("idle:", worker.counts)
queue.close()
