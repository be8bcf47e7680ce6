"""The consumer protocol as I/O-free plans (docs/design.md#where-a-job-goes): take (read ready
entries, honouring pause and limits), open (decode; what can never run goes dead with the
reason), settle (ack, retry with backoff, dead, release, hand back), keep alive (touch),
reclaim and prune. Two drivers run them through ``io.runner``: the Worker
(``consume/``) and the Reservation (``Queue.reserve``, ``consume/reservation.py``), which the HTTP
consumer routes use. Nothing here imports the producer plans, nor they this (pyproject.toml's
import contracts).
"""
