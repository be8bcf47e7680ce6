"""Results: a handler's return value kept for keep_result, read and awaited (docs/results.md)."""

import threading

import streamdelay as sd

queue = sd.Queue("reports", keep_result=3600)  # results kept one hour (default 0: not kept)
queue.enqueue("report.build", {"month": "2025-01"}, id="report-2025-01")
queue.enqueue("report.build", {"month": "2025-13"}, id="report-2025-13", max_attempts=1)

worker = sd.Worker(queue, group="reports")


@worker.handler("report.build")
def build(job: sd.Job) -> dict[str, object]:
    """What the handler returns is the job's result (msgspec-encodable, <= 64 KiB)."""
    if job.body["month"].endswith("13"):
        raise ValueError("no such month")
    return {"month": job.body["month"], "rows": 42}


def wait_for_report() -> None:
    """Blocks until the settle script signals the job's end: no polling."""
    found = queue.result("report-2025-01", timeout=30)
    print("waited:", found.state, found.value)


waiter = threading.Thread(target=wait_for_report)
waiter.start()
worker.run(until_idle=True)
waiter.join()
failed = queue.result("report-2025-13")
print("dead:", failed.state, failed.error.splitlines()[0])
queue.enqueue("report.build", {"month": "2025-02"}, id="report-2025-02", delay=3600)
queue.cancel("report-2025-02")  # a cancelled job has a result too
print("cancelled:", queue.result("report-2025-02").state)
print("unknown:", queue.result("report-1999-01"))
