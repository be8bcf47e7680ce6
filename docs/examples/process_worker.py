"""Process executor: CPU-bound handlers in child processes, results back, a hard time limit."""

import os

import streamdelay as sd

queue = sd.Queue("reports")  # URL from STREAMDELAY_URL, else redis://localhost:6379/0
# two children run the handlers (one job each at a time); handler_timeout kills a stuck one
worker = sd.Worker(queue, group="reports", executor="process", processes=2, handler_timeout=5)


@worker.handler("report.primes")
def count_primes(job: sd.Job) -> int:
    """Pure Python CPU work: in a child process it has a core of its own (no shared GIL)."""
    below = job.body["below"]
    return sum(all(n % d for d in range(2, int(n**0.5) + 1)) for n in range(2, below))


@worker.handler("report.stuck")
def stuck(job: sd.Job) -> str:
    """Spins on its first attempt: at handler_timeout its process is killed and replaced (a
    thread cannot be killed: it would spin on)."""
    while job.attempt == 1:
        pass
    return f"done on attempt {job.attempt}"


@worker.handler("report.crash")
def crash(job: sd.Job) -> str:
    """Ends its process on the first attempt: only this job's attempt fails."""
    if job.attempt == 1:
        os._exit(3)
    return f"done on attempt {job.attempt}"


if __name__ == "__main__":  # each child imports this module: the work of the script stays here
    queue.enqueue("report.primes", {"below": 20_000}, id="primes-20k", keep_result=60)
    queue.enqueue("report.primes", {"below": 30_000}, id="primes-30k", keep_result=60)
    queue.enqueue("report.stuck", {}, id="stuck-1", keep_result=60, backoff=[0.1])
    queue.enqueue("report.crash", {}, id="crash-1", keep_result=60, backoff=[0.1])
    worker.run(until_idle=True)
    for job_id in ("primes-20k", "primes-30k", "stuck-1", "crash-1"):
        done = queue.result(job_id)
        assert done is not None
        print(f"{job_id}: {done.value}")
    print("counts:", worker.counts)
    queue.close()
