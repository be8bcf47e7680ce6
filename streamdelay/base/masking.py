"""Secrets never reach a string: the one place that masks passwords in URLs and in free text.

Every face that shows a URL or an error (``repr`` of queues and workers, exception messages,
CLI lines, log lines of ``streamdelay worker``/``dispatch``) goes through these functions. A
secret is the password of a URL's user-info part and the value of every password-like option
(``password``, ``sentinel_password``, ``ssl_password``, any name holding ``password``,
``passwd``, ``secret`` or ``token``). Pure string work: never raises, whatever the input
(see docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote, unquote

MASK = "***"
_SECRET_NAME = r"[\w.-]*(?:password|passwd|secret|token)[\w.-]*"
# ``name=value`` of a secret option inside a URL: the value runs to the next option
_URL_OPTION = re.compile(rf"((?:^|[?&])(?:{_SECRET_NAME})=)([^&#]*)", re.IGNORECASE)
# the same in free text (messages, log lines), where a value ends at a blank, quote or comma
_TEXT_OPTION = re.compile(rf"((?<![\w.-])(?:{_SECRET_NAME})=)([^\s&#,;)'\"]*)", re.IGNORECASE)
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def mask_url(url: str) -> str:
    """``url`` with every secret replaced by ``***``: ``rediss://user:***@host:6380/0?ssl_password=***``.

    Works on malformed URLs too (no scheme, a stray ``@``): everything before the last ``@``
    but the user name counts as secret, so nothing leaks even when the URL cannot be parsed.
    """
    text = _URL_OPTION.sub(rf"\1{MASK}", url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    userinfo, at, hosts = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        rest = (f"{user}:{MASK}@" if colon else f"{MASK}@") + hosts
    return scheme + sep + rest


def mask_text(text: str) -> str:
    """Free text (an error message, a log line) with every URL masked by ``mask_url`` and every
    ``password=...``-like pair masked."""
    text = _URL_IN_TEXT.sub(lambda found: mask_url(found.group(0)), text)
    return _TEXT_OPTION.sub(rf"\1{MASK}", text)


def secrets_in(values: Iterable[str]) -> list[str]:
    """The secrets of URL-looking values (raw, decoded and percent-encoded), longest first.

    The CLI collects them from its arguments and ``STREAMDELAY_URL`` to scrub whatever it
    prints, including text from other libraries that ``mask_text`` would not recognise.
    """
    found: set[str] = set()
    for value in values:
        raw = [match.group(2) for match in _URL_OPTION.finditer(value)]
        rest = _URL_OPTION.sub("", value).partition("://")
        userinfo, at, _ = (rest[2] if rest[1] else rest[0]).rpartition("@")
        if at and ":" in userinfo:
            raw.append(userinfo.partition(":")[2])
        for secret in raw:
            found.update({secret, unquote(secret), quote(unquote(secret), safe="")})
    found.discard("")
    found.discard(MASK)
    return sorted(found, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***``, then ``mask_text`` applied."""
    for secret in secrets:
        text = text.replace(secret, MASK)
    return mask_text(text)
