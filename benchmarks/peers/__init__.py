"""The peers comparison: the same workloads run against arq, RQ, Dramatiq, Celery, SAQ, BullMQ
(Python), Huey and streamdelay, each in its own fresh redis-server (``benchmarks/peers/run.py``).

The peer libraries live only in ``.bench-venv`` (``make bench-full``), never in the runtime or dev
dependencies; these modules are not type-checked (mypy checks ``streamdelay/`` only).
"""
