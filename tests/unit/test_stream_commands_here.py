"""Stream I/O in one place (docs/design.md#stream-io): no module of the package but
``protocol/streams.py`` names a Redis stream command, as a string (``"XREADGROUP"``,
``"XINFO GROUPS"``) or as a redis-py method (``client.xadd``, ``xpending_range``...). Docstrings
and comments may name them; the Lua scripts run their own (one atomic state change each)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "streamdelay"
THE_MODULE = PACKAGE / "protocol" / "streams.py"
COMMANDS = frozenset({
    "XADD", "XACK", "XACKDEL", "XAUTOCLAIM", "XCLAIM", "XDEL", "XDELEX", "XGROUP", "XINFO",
    "XLEN", "XPENDING", "XRANGE", "XREAD", "XREADGROUP", "XREVRANGE", "XSETID", "XTRIM"})
# redis-py's stream methods (sync and asyncio clients, pipelines)
METHODS = frozenset({
    "xadd", "xack", "xackdel", "xautoclaim", "xclaim", "xdel", "xdelex", "xgroup_create",
    "xgroup_createconsumer", "xgroup_delconsumer", "xgroup_destroy", "xgroup_setid",
    "xinfo_consumers", "xinfo_groups", "xinfo_stream", "xlen", "xpending", "xpending_range",
    "xrange", "xread", "xreadgroup", "xrevrange", "xtrim"})


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that stand alone as a statement (docstrings)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def stream_names(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` of every stream command named in ``source``, docstrings left out."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            words = node.value.split()
            if words and ((words[0].upper() in COMMANDS and words[0].isupper())
                          or node.value in METHODS):
                found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Attribute) and node.attr in METHODS:
            found.append((node.lineno, "." + node.attr))
        elif isinstance(node, ast.Name) and node.id in METHODS:
            found.append((node.lineno, node.id))
    return found


def test_the_checker_sees_each_way_of_naming_a_command() -> None:
    source = '''"""XREADGROUP in a docstring is prose."""
def f(client, stream):
    """So is XADD here."""
    client.xadd(stream, {})  # XADD in a comment is too
    return ("XINFO", "GROUPS", stream), "XLEN a", getattr(client, "xrange"), "XX", "Xadd"
'''
    assert sorted(stream_names(source)) == [(4, ".xadd"), (5, "'XINFO'"), (5, "'XLEN a'"),
                                             (5, "'xrange'")]


def test_no_module_but_the_streams_module_names_a_stream_command() -> None:
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path != THE_MODULE
                 for line, what in stream_names(path.read_text())]
    assert offenders == [], "build these in protocol/streams.py:\n" + "\n".join(offenders)
