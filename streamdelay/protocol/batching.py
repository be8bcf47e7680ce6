"""Group items by partition and slice them into bounded batches: the one way every script call
that carries many items (enqueue, ack, touch, release) is cut (docs/keys.md, batch sizes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")


def by_partition(items: Iterable[T], partition: Callable[[T], int]) -> dict[int, list[T]]:
    """``items`` grouped by ``partition(item)``, in ascending partition order, order kept within."""
    grouped: dict[int, list[T]] = {}
    for item in items:
        grouped.setdefault(partition(item), []).append(item)
    return dict(sorted(grouped.items()))


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def partition_batches(
    items: Iterable[T], partition: Callable[[T], int], size: int,
    weight: Callable[[T], int] | None = None, max_weight: int = 0,
) -> Iterator[tuple[int, Sequence[T]]]:
    """``(partition, batch)`` pairs: grouped by partition (ascending), order kept, at most
    ``size`` items per batch and, with ``weight``, at most ``max_weight`` in total (but never an
    empty batch: an item heavier than that goes alone)."""
    for number, grouped in by_partition(items, partition).items():
        if weight is None:
            for batch in batches(grouped, size):
                yield number, batch
            continue
        if len(grouped) <= size and sum(map(weight, grouped)) <= max_weight:
            yield number, grouped  # the common case: one batch
            continue
        current: list[T] = []
        total = 0
        for item in grouped:
            heft = weight(item)
            if current and (len(current) == size or total + heft > max_weight):
                yield number, current
                current, total = [], 0
            current.append(item)
            total += heft
        yield number, current
