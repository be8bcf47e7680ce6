"""End-to-end benchmarks: jobs from ``enqueue`` to ``ack`` through real worker processes
(``python -m streamdelay worker benchmarks.e2e.bench_app:worker``): drain rates, lateness,
memory back to baseline, lifecycle events, results, Redis against Valkey, Redis Cluster."""
