"""Bearer tokens of the HTTP service: ``--token-file`` or ``STREAMDELAY_TOKENS``.

The format is ``name:token:scope,scope;name2:token2:scope`` (``;`` or new lines between
entries, ``#`` starts a comment line). Scopes: ``read`` (GET routes, the dashboard's views),
``write`` (enqueue, cancel, reschedule), ``consume`` (reserve, ack, fail, touch), ``admin``
(dead replay and purge, pause and resume). Tokens are compared in constant time
(``hmac.compare_digest``) and never logged: a ``Principal`` carries the name only
(docs/http.md#tokens).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from ..base.errors import ConfigError

SCOPES = ("read", "write", "consume", "admin")
TOKENS_ENV = "STREAMDELAY_TOKENS"
MIN_TOKEN_LENGTH = 16
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-@")


@dataclass(frozen=True)
class Principal:
    """Who made a request: the token's ``name`` and its ``scopes`` (never the token itself)."""

    name: str
    scopes: frozenset[str]

    def allows(self, scope: str) -> bool:
        """True when this principal holds ``scope``."""
        return scope in self.scopes


# With no token configured the service listens on loopback only and every request is this one.
ANONYMOUS = Principal("anonymous", frozenset(SCOPES))


@dataclass(frozen=True)
class _Entry:
    principal: Principal
    digest: bytes  # sha256 of the token: equal lengths for compare_digest, no token kept


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class TokenTable:
    """The configured tokens; ``authenticate(token)`` finds the principal of one."""

    def __init__(self, entries: Iterable[tuple[str, str, Iterable[str]]] = ()) -> None:
        listed = list(entries)
        self._entries: list[_Entry] = []
        names: set[str] = set()
        for name, token, scopes in listed:
            if name in names:
                raise ConfigError(f"tokens: the name {name!r} is given twice", field="tokens")
            names.add(name)
            self._entries.append(_Entry(Principal(name, frozenset(scopes)), _digest(token)))
        # the tokens themselves, for the log formatter to mask (never logged, never shown)
        self.secrets: tuple[str, ...] = tuple(token for _, token, _ in listed)

    @property
    def configured(self) -> bool:
        """True when at least one token is configured (else: loopback only, no auth)."""
        return bool(self._entries)

    @property
    def names(self) -> list[str]:
        """The names of the tokens (for the start-up log line)."""
        return [entry.principal.name for entry in self._entries]

    def authenticate(self, token: str | None) -> Principal | None:
        """The principal of ``token``, None when it matches none. Every entry is compared, in
        constant time, so the answer's timing says nothing about which part matched."""
        if not token:
            return None
        digest = _digest(token)
        found: Principal | None = None
        for entry in self._entries:
            if hmac.compare_digest(entry.digest, digest):
                found = entry.principal
        return found

    def fingerprint(self, name: str) -> bytes | None:
        """The digest of the token named ``name`` (None: no such name), which a dashboard
        session's signature covers so that it ends with the token (never sent anywhere)."""
        for entry in self._entries:
            if entry.principal.name == name:
                return entry.digest
        return None

    def principal(self, name: str) -> Principal | None:
        """The principal named ``name`` (a signed session cookie carries the name only)."""
        for entry in self._entries:
            if entry.principal.name == name:
                return entry.principal
        return None


def _bad(where: str, message: str) -> ConfigError:
    return ConfigError(f"tokens: {where}: {message} (format: name:token:scope,scope;... with "
                       f"scopes {', '.join(SCOPES)})", field="tokens")


Entry = tuple[str, str, str, list[str]]  # where it was written, name, token, scopes


def _entry(text: str, where: str) -> Entry:
    parts = text.split(":")
    if len(parts) != 3:
        raise _bad(where, "not name:token:scopes")
    name, token, scope_text = (part.strip() for part in parts)
    if not name or not set(name) <= _NAME_CHARS or len(name) > 64:
        raise _bad(where, "the name must be 1-64 letters, digits or _ . - @")
    if len(token) < MIN_TOKEN_LENGTH or any(ch.isspace() for ch in token):
        raise _bad(where, f"{name}: a token needs at least {MIN_TOKEN_LENGTH} characters and "
                          f"no spaces")
    scopes = [scope.strip() for scope in scope_text.split(",") if scope.strip()]
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if not scopes or unknown:
        raise _bad(where, f"{name}: unknown or no scopes {unknown or scope_text!r}")
    return where, name, token, scopes


def _entries(text: str, source: str | None, by_line: bool) -> list[Entry]:
    """The entries of ``text``; each error says where: ``FILE line N`` (``by_line``), else
    ``SOURCE entry N``."""
    found: list[Entry] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("#"):
            continue
        for chunk in line.split(";"):
            if chunk.strip():
                where = (f"{source} line {number}" if by_line else
                         " ".join(filter(None, (source, f"entry {len(found) + 1}"))))
                found.append(_entry(chunk.strip(), where))
    return found


def _table(entries: list[Entry]) -> TokenTable:
    seen: set[str] = set()
    for where, name, _, _ in entries:
        if name in seen:
            raise _bad(where, f"the name {name!r} is given twice")
        seen.add(name)
    return TokenTable((name, token, scopes) for _, name, token, scopes in entries)


def parse_tokens(text: str, source: str | None = None) -> TokenTable:
    """Parse ``name:token:scope,scope;...`` (entries split by ``;`` or new lines); errors
    name the entry (``source entry N``)."""
    return _table(_entries(text, source, by_line=False))


def load_tokens(token_file: str | None, env_value: str | None) -> TokenTable:
    """The tokens of ``--token-file`` and of ``STREAMDELAY_TOKENS`` together; an error names
    the file and its line, or the variable and the entry."""
    entries: list[Entry] = []
    if token_file is not None:
        try:
            with open(token_file, encoding="utf-8") as handle:
                text = handle.read()
        except OSError as exc:
            raise ConfigError(f"token_file: cannot read {token_file!r}: {exc.strerror}",
                              field="token_file") from None
        entries += _entries(text, token_file, by_line=True)
    if env_value:
        entries += _entries(env_value, TOKENS_ENV, by_line=False)
    return _table(entries)
