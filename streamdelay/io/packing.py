"""Commands packed in C: the connections of a client's pools (sync or asyncio) let hiredis pack
their commands and pipelines when it is installed (docs/benchmarks.md#what-bounds-the-figures);
``clients.py`` applies it to every pool it builds.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from redis.connection import HiredisRespSerializer
from redis.utils import HIREDIS_AVAILABLE


def packed_in_c(pool: Any) -> None:
    """Let hiredis pack the commands of ``pool``'s connections (sync or asyncio), when it is
    installed.

    redis-py's asyncio connections pack every command in Python, one join per argument: an
    ``ackJobs`` call of 64 deliveries took ~245 µs against ~50 µs with hiredis, a few µs per job
    on the worker's and ``AsyncQueue``'s hot paths; its sync connections use hiredis but look
    at every argument in a Python generator first (docs/benchmarks.md#what-bounds-the-figures).
    """
    if HIREDIS_AVAILABLE:
        pool.connection_class = _packed_class(pool.connection_class)


@cache
def _packed_class(base: type) -> type:
    import hiredis  # present: only called when redis-py found it

    serializer = HiredisRespSerializer()

    def pack_command(self: Any, *args: Any) -> list[bytes]:
        first = args[0]
        if isinstance(first, str) and " " not in first:  # the common case: straight to C
            try:
                return [hiredis.pack_command(args)]
            except TypeError:  # bytearray, memoryview, ...: redis-py's own way below
                pass
        packed: list[bytes] = serializer.pack(*args)
        return packed

    def pack_commands(self: Any, commands: Any) -> list[bytes]:
        # a pipeline's commands, each packed as above (redis-py's own pack_commands goes
        # through its serializer's per-argument generator: ~0.5 µs per job of enqueue_many);
        # small ones joined, a large one (a big body) left as its own piece, uncopied
        output: list[bytes] = []
        pieces: list[bytes] = []
        size = 0
        cutoff = self._buffer_cutoff
        for args in commands:
            for chunk in pack_command(self, *args):
                if len(chunk) > cutoff:
                    if pieces:
                        output.append(b"".join(pieces))
                        pieces, size = [], 0
                    output.append(chunk)
                    continue
                pieces.append(chunk)
                size += len(chunk)
                if size > cutoff:
                    output.append(b"".join(pieces))
                    pieces, size = [], 0
        if pieces:
            output.append(b"".join(pieces))
        return output

    return type(f"Packed{base.__name__}", (base,),
                {"pack_command": pack_command, "pack_commands": pack_commands})
