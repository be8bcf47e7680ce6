"""asyncio: AsyncQueue for producers and ``await worker.serve()`` inside a running event loop."""

import asyncio
from datetime import datetime, timedelta, timezone

import streamdelay as sd


async def main() -> None:
    """Enqueue with ``at=`` and ``enqueue_many``, then serve the jobs in the same loop."""
    async with sd.AsyncQueue("appointments", serializer="msgpack") as queue:
        # `at` wants an aware datetime (or epoch seconds). Due times are kept on the server clock.
        soon = datetime.now(timezone.utc) + timedelta(milliseconds=500)
        first = await queue.enqueue("appointment.remind", {"patient": "p-1"}, at=soon, id="a-1")
        print(f"enqueued {first.id}: created={first.created}")
        batch = await queue.enqueue_many([
            sd.JobSpec("appointment.remind", {"patient": f"p-{n}"}, delay=timedelta(seconds=0.2),
                       id=f"a-{n}")
            for n in (2, 3)
        ])
        print("enqueued:", [r.id for r in batch])
        info = await queue.get("a-1")
        assert info is not None
        print(f"get a-1: state={info.state}, body={info.body}")

        worker = sd.Worker(queue, group="clinic", concurrency=4)
        seen: list[str] = []

        @worker.handler("appointment.remind")
        async def remind(job: sd.Job) -> None:
            seen.append(job.id)

        await worker.serve(until_idle=True)
        print("reminded:", sorted(seen))


asyncio.run(main())
