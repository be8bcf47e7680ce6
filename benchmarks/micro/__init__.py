"""Micro benchmarks: one component in one process against a private redis-server (enqueue,
dispatch, the pull API, listing and search, the Redis cost of one script call or one record).
No worker processes, no HTTP."""
