"""The package layout (docs/design.md#the-package-at-a-glance): no two modules of the package
share a file name, so a name found in a traceback, a log line or a review points at one file;
and the roles named there exist as packages."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import streamdelay

PACKAGE = Path(streamdelay.__file__).parent
ROLES = ("client", "consume", "consume/core", "consume/processes", "dispatch", "protocol", "io",
         "web", "cli", "telemetry", "limits", "metrics", "base", "testing", "contrib")


def test_no_two_modules_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            where[path.name].append(str(path.relative_to(PACKAGE)))
    shared = {name: sorted(paths) for name, paths in where.items() if len(paths) > 1}
    assert shared == {}


def test_the_roles_are_packages() -> None:
    missing = [role for role in ROLES if not (PACKAGE / role / "__init__.py").is_file()]
    assert missing == []
