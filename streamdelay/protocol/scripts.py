"""The Lua scripts (``lua/<verbObject>-<numKeys>.lua``): loading, includes and call objects.

Scripts are read once, their ``-- @include name`` lines replaced by ``lua/includes/name.lua``,
and called by SHA (EVALSHA) with a reload on NOSCRIPT (see ``io/steps.py``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from ..base.errors import ConfigError

_INCLUDE = re.compile(r"^-- @include ([a-z_]+)\s*$", re.MULTILINE)
_NAME = re.compile(r"^([a-z][A-Za-z]+)-(\d+)$")  # one file per verb: docs/keys.md#versioning
Arg = str | bytes | int | float


def lua_dir() -> Path:
    """Directory holding the scripts: inside the installed package, else the source tree."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "lua", package.parent / "lua"):
        if (candidate / "includes").is_dir():
            return candidate
    raise ConfigError("lua: the Lua scripts were not found next to the streamdelay package")


@dataclass(frozen=True)
class Script:
    """One protocol script: its name (``promoteDue``), key count, assembled source and SHA-1."""

    name: str
    num_keys: int
    source: str

    @property
    def flags(self) -> tuple[str, ...]:
        """The Redis 7 script flags of its ``#!lua flags=...`` first line (docs/keys.md)."""
        first = self.source.partition("\n")[0]
        if not first.startswith("#!lua") or "flags=" not in first:
            return ()
        return tuple(first.split("flags=", 1)[1].split(","))

    @cached_property
    def sha(self) -> str:
        """SHA-1 of the assembled source, as EVALSHA wants it (computed once per script)."""
        return hashlib.sha1(self.source.encode()).hexdigest()

    def call(self, keys: Sequence[str], args: Sequence[Arg], *, durable: bool = False
             ) -> ScriptCall:
        """A call of this script; the key count is checked against the file name.

        ``durable=True`` marks a call that creates or changes a job's fate: under a queue's
        ``replicas=`` setting the runner follows it with ``WAIT`` (docs/design.md#durable-steps).
        """
        if len(keys) != self.num_keys:
            raise ConfigError(f"script {self.name} takes {self.num_keys} keys, got {len(keys)}")
        return ScriptCall(self, tuple(keys), tuple(args), durable)


@dataclass(frozen=True)
class ScriptCall:
    """A script with its KEYS and ARGV, ready to be sent by a runner."""

    script: Script
    keys: tuple[str, ...]
    args: tuple[Arg, ...]
    durable: bool = False  # changes a job's fate: waited on under replicas= (durability.py)


def _assemble(path: Path, includes: Path) -> str:
    """The script with every ``-- @include name`` line replaced by that include's text.

    Includes are resolved transitively (an include lists its own ``-- @include`` lines in its
    header), each one inlined once, before its first user; the line of one already inlined
    stays as a comment, so a script that lists all its includes in order assembles exactly as
    the one-level recipe of docs/keys.md does. A cycle or a missing include is refused, naming
    the chain.
    """
    done: set[str] = set()

    def resolve(name: str, chain: tuple[str, ...], line: str) -> str:
        if name in chain:
            raise ConfigError(f"lua: include cycle {' -> '.join((*chain, name))}")
        if name in done:
            return line
        source = includes / f"{name}.lua"
        if not source.is_file():
            raise ConfigError(f"lua: {' -> '.join(chain)} includes {name!r}, which does not "
                              f"exist in {includes}")
        text = _INCLUDE.sub(lambda m: resolve(m.group(1), (*chain, name), m.group(0)),
                            source.read_text())
        done.add(name)
        return text

    return _INCLUDE.sub(lambda m: resolve(m.group(1), (path.stem,), m.group(0)), path.read_text())


@cache
def load_scripts() -> dict[str, Script]:
    """Every script in ``lua/``, by name; read once per process."""
    root = lua_dir()
    scripts: dict[str, Script] = {}
    for path in sorted(root.glob("*.lua")):
        match = _NAME.match(path.stem)
        if not match:
            raise ConfigError(f"lua: script file name {path.name!r} is not <verbObject>-<numKeys>")
        scripts[match.group(1)] = Script(
            match.group(1), int(match.group(2)), _assemble(path, root / "includes")
        )
    return scripts


def script(name: str) -> Script:
    """The script called ``name`` (e.g. ``"enqueueJobs"``)."""
    return load_scripts()[name]
