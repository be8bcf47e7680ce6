"""The messages between a worker and its handler processes (docs/worker.md#executors).

Every message is one msgspec MessagePack frame of a tagged struct, sent with
``multiprocessing.connection.Connection.send_bytes`` (a length-prefixed frame over a pipe): a job
crosses the boundary as its fields and its body re-encoded as MessagePack, a result as the bytes
the queue stores, never as serialised Python objects; the handler table, sent once when a child
starts, names each handler by module and qualified name (``table.py``).
"""

from __future__ import annotations

from typing import Any

import msgspec


class RunJob(msgspec.Struct, tag="run", array_like=True):
    """Parent to child: run the handler of ``topic`` for this job (``body``: MessagePack)."""

    topic: str
    id: str
    body: bytes
    due: int
    created: int
    attempt: int
    max_attempts: int
    ttr: float
    headers: dict[str, str]
    entry_id: str
    partition: int
    keep_result_ms: int
    checkpoint: bytes = b"\xc0"  # ``job.last_checkpoint`` as MessagePack (nil: none)


class Stop(msgspec.Struct, tag="stop", array_like=True):
    """Parent to child: exit (the pool closes, or the child ran ``max_jobs_per_child`` jobs)."""


class Ready(msgspec.Struct, tag="ready", array_like=True):
    """Child to parent: the handlers are loaded; the child takes jobs."""

    pid: int


class LoadFailed(msgspec.Struct, tag="load_failed", array_like=True):
    """Child to parent: the handlers could not be loaded (the child exits)."""

    error: str


class Progress(msgspec.Struct, tag="progress", array_like=True):
    """Child to parent: ``job.progress`` (its JSON), sent with the next heartbeat."""

    data: bytes


class Checkpoint(msgspec.Struct, tag="checkpoint", array_like=True):
    """Child to parent: ``job.checkpoint`` (its JSON), written with the next heartbeat."""

    data: bytes


class Done(msgspec.Struct, tag="done", array_like=True):
    """Child to parent: the handler returned; ``result``: the encoded result without its format
    letter (None when the job keeps no result)."""

    result: bytes | None = None


class Failed(msgspec.Struct, tag="failed", array_like=True):
    """Child to parent: the handler raised. ``kind`` says which control exception (``retry``,
    ``drop``, ``snooze``, ``body``, ``aborted``) or ``error``; ``error`` is its text
    (``describe_error``), ``delay`` a retry's or a snooze's seconds."""

    kind: str
    error: str
    delay: float = 0.0


ToChild = RunJob | Stop
ToParent = Ready | LoadFailed | Progress | Checkpoint | Done | Failed

_encoder = msgspec.msgpack.Encoder()
_to_child = msgspec.msgpack.Decoder(ToChild)
_to_parent = msgspec.msgpack.Decoder(ToParent)


def encode(message: Any) -> bytes:
    """One message as its frame's bytes."""
    return _encoder.encode(message)


def to_child(data: bytes) -> RunJob | Stop:
    """Decode a frame the parent sent."""
    return _to_child.decode(data)


def to_parent(data: bytes) -> Ready | LoadFailed | Progress | Checkpoint | Done | Failed:
    """Decode a frame a child sent."""
    return _to_parent.decode(data)


def encode_body(body: Any) -> bytes:
    """A decoded body as MessagePack (a typed body is decoded into its type again in the
    child)."""
    return _encoder.encode(body)
