"""The queue API: enqueue plans, the async coalescer, Queue and AsyncQueue."""
