"""The Lua protocol without a server: file naming and headers, key counts, version suffixes and
the error that names a server older than 7. Loading by SHA, NOSCRIPT recovery and scripts safe to
run twice are tests/integration/test_scripts.py."""

from __future__ import annotations

import re

import pytest

import streamdelay as sd
from streamdelay.protocol.scripts import load_scripts, lua_dir, script

pytestmark = pytest.mark.timeout(60)


def test_every_script_is_named_verb_object_keys_and_documents_its_contract() -> None:
    paths = sorted(lua_dir().glob("*.lua"))
    assert {p.stem.split("-")[0] for p in paths} == set(load_scripts())
    for path in paths:
        assert re.fullmatch(r"[a-z]+[A-Z][A-Za-z]*(V\d+)?-\d+", path.stem), path.name
        text = path.read_text()
        first, _, rest = text.partition("\n")
        if first.startswith("#!"):  # Redis 7 script flags (docs/keys.md); no flags: may write
            assert first in {"#!lua", "#!lua flags=no-writes", "#!lua flags=allow-oom"}, path.name
            text = rest
        else:  # only a script that must run its reads under maxmemory goes without (it says so)
            assert "No shebang on purpose" in text, path.name
        header = text.split("\n\n", 1)[0]
        assert header.startswith(f"-- {path.stem}:"), path.name
        assert "KEYS" in header and "ARGV" in header and "Return" in header, path.name
        if "flags=" in first:
            assert "Flags:" in header, path.name
    flags = {name: s.flags for name, s in load_scripts().items()}
    assert flags["getJob"] == flags["readStats"] == ("no-writes",)
    assert flags["cancelJob"] == flags["purgeDead"] == ("allow-oom",)


def test_key_count_is_checked_on_every_call() -> None:
    with pytest.raises(sd.ConfigError, match="takes 6 keys"):
        script("promoteDue").call(["only-one"], [1])


def test_a_server_older_than_7_is_named_when_it_cannot_compile_the_flags_line() -> None:
    """Redis 6 reads the ``#!lua`` line as Lua and fails to compile it (no 6.x server here: the
    reply it sends is built by hand)."""
    from redis.exceptions import ResponseError

    from streamdelay.io.calls import old_server as _old_server

    reply = ResponseError("Error compiling script (new function): user_script:1: unexpected "
                          "symbol near '#'")
    mapped = _old_server(reply)
    assert isinstance(mapped, sd.ConfigError) and "Redis 7.0 or newer" in str(mapped)
    assert _old_server(ResponseError("ERR something else")) is not None


def test_a_new_version_of_a_script_may_carry_a_version_suffix() -> None:
    from streamdelay.protocol.scripts import _NAME
    named = _NAME.match("enqueueJobs-6")
    assert named is not None and named.groups() == ("enqueueJobs", "6")
    assert _NAME.match("enqueue2Jobs-6") is None
