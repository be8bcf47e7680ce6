"""Tokens, sessions and settings of the HTTP service, without a server (docs/http.md#tokens)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamdelay.base.errors import ConfigError
from streamdelay.web.auth import SessionSigner
from streamdelay.web.serve_settings import ServeSettings, is_loopback
from streamdelay.web.tokens import ANONYMOUS, load_tokens, parse_tokens

GOOD = "app:app-token-0123456789:write,consume;ops:ops-token-0123456789:read,admin"


def test_parse_and_authenticate() -> None:
    table = parse_tokens(GOOD)
    assert table.configured and table.names == ["app", "ops"]
    app = table.authenticate("app-token-0123456789")
    assert app is not None and app.name == "app" and app.scopes == {"write", "consume"}
    assert app.allows("write") and not app.allows("read")
    assert table.authenticate("app-token-012345678") is None
    assert table.authenticate("") is None and table.authenticate(None) is None
    assert table.principal("ops") is not None and table.principal("nobody") is None
    assert ANONYMOUS.scopes == {"read", "write", "consume", "admin"}
    assert "app-token-0123456789" not in repr(app)


@pytest.mark.parametrize(("text", "why"), [
    ("app:short:read", "at least 16"),
    ("app:app-token-0123456789", "name:token:scopes"),
    ("app:app-token-0123456789:read,fly", "unknown or no scopes"),
    ("app:app-token-0123456789:", "unknown or no scopes"),
    ("a pp:app-token-0123456789:read", "the name must be"),
    ("app:app-token-0123456789:read;app:app-token-9876543210:read", "given twice"),
])
def test_bad_token_entries_are_refused(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as caught:
        parse_tokens(text)
    assert caught.value.field == "tokens"
    assert "0123456789" not in str(caught.value)  # the message never quotes a token


def test_token_file_and_environment_add_up(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# operators\nops:ops-token-0123456789:read,admin\n\n")
    table = load_tokens(str(path), "app:app-token-0123456789:write")
    assert table.names == ["ops", "app"]
    with pytest.raises(ConfigError) as caught:
        load_tokens(str(tmp_path / "missing"), None)
    assert caught.value.field == "token_file"


def test_session_cookies_are_signed_and_expire() -> None:
    signer = SessionSigner(b"k" * 32, max_age=60)
    value = signer.sign("ops", now=1000.0)
    assert signer.verify(value, now=1030.0) == "ops"
    assert signer.verify(value, now=1061.0) is None
    assert SessionSigner(b"j" * 32, max_age=60).verify(value, now=1030.0) is None
    name, expires, mac = value.split(".")
    assert signer.verify(f"{name}.{int(expires) + 100}.{mac}", now=1030.0) is None
    assert signer.verify("x.y", now=0) is None and signer.verify("", now=0) is None


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.0.0.5", False),
    ("example.com", False)])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_settings_check_their_values() -> None:
    with pytest.raises(ConfigError, match="queue"):
        ServeSettings(url="redis://x", queues=())
    with pytest.raises(ConfigError, match="queue"):
        ServeSettings(url="redis://x", queues=("bad name",))
    with pytest.raises(ConfigError, match="twice"):
        ServeSettings(url="redis://x", queues=("a", "a"))
    open_wide = ServeSettings(url="redis://x", queues=("a",), host="0.0.0.0")
    with pytest.raises(ConfigError, match="refusing") as caught:
        open_wide.check_bind()
    assert caught.value.field == "host"
    guarded = ServeSettings(url="redis://x", queues=("a",), host="0.0.0.0",
                            tokens=parse_tokens(GOOD))
    guarded.check_bind()




