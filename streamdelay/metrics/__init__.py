"""The queue-level exporter of Prometheus metrics (extra ``streamdelay[metrics]``,
``streamdelay exporter``; docs/operations.md). A worker's own metrics are telemetry
(``telemetry/worker_metrics.py``): the worker sits below the queue client this exporter uses.
"""
