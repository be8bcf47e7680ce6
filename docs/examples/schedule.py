"""Schedules: a recurring job declared at worker start, fired once per tick by the dispatcher."""

import streamdelay as sd

queue = sd.Queue("monitoring")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0
# Declared from code at every worker start: the same spec again changes nothing.
print("declared:", queue.schedule("heartbeat", "monitor.ping", {"target": "db"}, every=1))
print("declared again:", queue.schedule("heartbeat", "monitor.ping", {"target": "db"}, every=1))
queue.schedule("nightly-report", "report.build", {"kind": "daily"},
               cron="30 2 * * *", tz="Europe/Berlin", missed="once")
print("schedules:", [s.name for s in queue.schedules()])

worker = sd.Worker(queue, group="monitor")  # embeds a dispatcher, which fires the schedules
ticks: list[int] = []


@worker.handler("monitor.ping")
async def ping(job: sd.Job) -> None:
    """Each tick is an ordinary job with the id ``heartbeat@<tick epoch ms>``."""
    name, tick = job.id.split("@")
    ticks.append(int(tick))
    gap = f", {ticks[-1] - ticks[-2]} ms after the one before" if len(ticks) > 1 else ""
    print(f"tick {len(ticks)} of {name}: {job.body}{gap}", flush=True)
    if len(ticks) == 3:
        worker.stop()


worker.run()
print("unschedule:", queue.unschedule("heartbeat"), queue.unschedule("nightly-report"))
print("schedules:", queue.schedules())
queue.close()
