"""Where ``streamdelay serve`` spends its time: py-spy's collapsed stacks (``--format raw``)
summed by package and by stage, for ``benchmarks/web/http_bench.py --profile DIR``.
"""

from __future__ import annotations

from pathlib import Path

STAGES = {  # name -> path prefixes of its frames, as py-spy names them
    "the streamdelay library (producer, plans, Redis I/O)": (
        "streamdelay/client/", "streamdelay/io/", "streamdelay/protocol/",
        "streamdelay/base/"),
    "redis-py": ("redis/",),
    "streamdelay/web (middlewares and routes, with all they call)": ("streamdelay/web/",),
    "litestar": ("litestar/",),
    "guards in a thread hop (litestar sync_to_thread)": ("litestar/concurrency.py",),
    "uvicorn": ("uvicorn/",),
}


def by_stage(collapsed: str) -> dict[str, float]:
    """The share of samples whose stack holds a frame of each stage (they overlap)."""
    counts = dict.fromkeys(STAGES, 0)
    whole = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        whole += int(count)
        for name, prefixes in STAGES.items():
            if any(f"({prefix}" in stack for prefix in prefixes):
                counts[name] += int(count)
    return {name: n / max(whole, 1) for name, n in counts.items()}


def by_package(collapsed: str) -> list[tuple[str, float]]:
    """Self-time shares by package from py-spy's collapsed stacks (``frame;frame count``)."""
    totals: dict[str, int] = {}
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        leaf = stack.rsplit(";", 1)[-1]
        path = leaf[leaf.rfind("(") + 1:].split(":")[0]
        totals[package_of(path)] = totals.get(package_of(path), 0) + int(count)
    whole = sum(totals.values()) or 1
    return sorted(((k, v / whole) for k, v in totals.items()), key=lambda kv: -kv[1])


def package_of(path: str) -> str:
    """``litestar``, ``uvicorn``, ``streamdelay``, ``redis``, ``asyncio``... for a source path as
    py-spy names it (relative to its ``sys.path`` entry: ``litestar/routes/http.py``)."""
    if "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    head, _, rest = path.partition("/")
    if not rest:
        return f"{Path(path).stem} (stdlib module)" if path.endswith(".py") else path
    return head


def summary(collapsed: str) -> str:
    """Self time by package, then the inclusive share of each stage, one line each."""
    lines = ["self time by package:"]
    lines += [f"  {share:6.1%}  {name}" for name, share in by_package(collapsed)]
    lines += ["inclusive (samples with a frame of it on the stack):"]
    lines += [f"  {share:6.1%}  {name}" for name, share in by_stage(collapsed).items()]
    return "\n".join(lines)
