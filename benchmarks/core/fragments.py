"""The report's words: the markdown fragments of ``docs/benchmarks-report/`` and their
``{placeholders}``, filled from one run (``report_notes``, ``targets``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from benchmarks.core.harness import NOT_MEASURED, ROOT

FRAGMENTS = ROOT / "docs" / "benchmarks-report"
PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")
COMMENT = re.compile(r"\A<!--.*?-->\n*", re.DOTALL)
KEYED = re.compile(r"^- `([a-z0-9_.]+)`: (.*)$", re.MULTILINE)


def unwrap(markdown: str) -> str:
    """A fragment as the report prints it: its leading comment dropped, each paragraph and each
    bullet (``- `` at the start of a line, continued by indented lines) joined into one line;
    table rows (``|``) and headings stay lines of their own."""
    lines: list[str] = []
    for line in COMMENT.sub("", markdown).splitlines():
        if not line.strip():
            lines.append("")
        elif (lines and lines[-1] and not lines[-1].startswith(("#", "|"))
              and (line.startswith(" ") or not line.startswith(("- ", "#", "|")))):
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return "\n".join(lines).strip("\n")


def fragment(name: str, folder: Path = FRAGMENTS) -> str:
    """The unwrapped text of ``docs/benchmarks-report/<name>``."""
    return unwrap((folder / name).read_text(encoding="utf-8"))


@cache
def keyed(name: str) -> dict[str, str]:
    """A fragment of bullets ``- `key`: words`` as a mapping key -> words."""
    return dict(KEYED.findall(fragment(name)))


def fill(template: str, values: Mapping[str, str]) -> str:
    """The template with every placeholder replaced; one this run has no value for reads
    "not measured"."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), NOT_MEASURED), template)


def heading_and_body(text: str) -> tuple[str, str]:
    """A fragment that opens with its ``## `` heading, split into the heading and the rest."""
    heading, _, body = text.partition("\n\n")
    return heading, body
