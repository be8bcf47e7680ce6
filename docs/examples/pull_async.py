"""The pull API on asyncio: several consumers in one process, each a task (docs/pull.md)."""

import asyncio

import streamdelay as sd


async def consume(queue: sd.AsyncQueue, name: str, done: list[str]) -> None:
    """Take jobs until none came for a second."""
    while jobs := await queue.reserve("thumbnail", consumer=name, wait=1, count=5):
        for job in jobs:
            done.append(job.body["image"])
            await job.ack()


async def main() -> None:
    async with sd.AsyncQueue("images") as queue:
        await queue.enqueue_many([sd.JobSpec("thumbnail", {"image": f"img-{i}.png"})
                                  for i in range(10)])
        dispatcher = sd.Dispatcher(queue.config)  # or `streamdelay dispatch images`
        promoting = asyncio.create_task(dispatcher.run())
        done: list[str] = []
        await asyncio.gather(*(consume(queue, f"thumbs-{i}", done) for i in range(3)))
        dispatcher.stop()
        await promoting
        await dispatcher.close()
        print(f"{len(done)} thumbnails, each once: {len(set(done)) == len(done)}")


asyncio.run(main())
