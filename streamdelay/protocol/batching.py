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
    items: Iterable[T], partition: Callable[[T], int], size: int
) -> Iterator[tuple[int, Sequence[T]]]:
    """``(partition, batch)`` pairs: grouped by partition (ascending), at most ``size`` each."""
    for number, grouped in by_partition(items, partition).items():
        for batch in batches(grouped, size):
            yield number, batch


def batch_count(items: Iterable[T], partition: Callable[[T], int], size: int) -> int:
    """How many batches ``partition_batches`` yields, without building them."""
    counts: dict[int, int] = {}
    for item in items:
        number = partition(item)
        counts[number] = counts.get(number, 0) + 1
    return sum(-(-n // size) for n in counts.values())
