"""``redis-benchmark`` on a private server: the server's own ceiling on this machine, the first
section of ``docs/benchmarks.md`` (the raw figures the others are read against).

Run alone: ``.venv/bin/python benchmarks/micro/redis_ceiling.py [--requests 100000]``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.core.harness import Section, redis_server

SHAPES = ((1, 1), (1, 50), (16, 50))  # (pipeline, clients)


def run(requests: int = 100_000) -> Section:
    """``redis-benchmark`` of PING, SET, ZADD and XADD at each pipeline and client count."""
    rows = []
    with redis_server() as server:
        for pipeline, clients in SHAPES:
            out = subprocess.run(
                ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-q",
                 "-n", str(requests), "-c", str(clients), "-P", str(pipeline), "-r", "100000",
                 "-t", "ping,set,zadd,xadd"], capture_output=True, text=True, timeout=300,
                check=True).stdout
            for line in out.replace("\r", "\n").splitlines():
                match = re.match(r"^(\S+).*?: ([\d.]+) requests per second", line.strip())
                if match:
                    rows.append([match.group(1).rstrip(":"), str(clients), str(pipeline),
                                 f"{float(match.group(2)):,.0f}"])
    return Section("Raw Redis ceilings (`redis-benchmark`, same run)",
                   ["command", "clients", "pipeline", "ops/s"], rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    run(parser.parse_args().requests).print()
