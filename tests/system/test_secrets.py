"""Secrets stay secret: every password-like value (user-info password, ``password``,
``sentinel_password``, ``ssl_password``) is masked in every face (repr, exceptions, CLI lines, a
real worker's log); TLS checks host names explicitly; ``rediss+sentinel://`` speaks TLS to the
Sentinels too. Real redis-server / Sentinel processes with throw-away certificates.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import redis

import streamdelay as sd
from streamdelay.base.masking import mask_text, mask_url, scrub, secrets_in
from streamdelay.io import clients, topology
from tests.support.redis_server import free_port, read_until, wait_until
from tests.support.tls_servers import MASTER_NAME, make_certificates, tls_redis, tls_sentinel
from tests.system.test_cli import cli_env, command

ROOT = Path(__file__).resolve().parents[2]
PW, SSL_PW, SENT_PW = "Pw-user-4u7", "Pw-sslkey-9q2", "Pw-sentinel-3k8"
ODD_PW = "p@ss:w/rd?&#1"  # needs percent-encoding in a URL
SECRETS = (PW, SSL_PW, SENT_PW, ODD_PW, quote(ODD_PW, safe=""))


def leaked(*texts: str) -> list[str]:
    """The secrets found in any of ``texts``."""
    return sorted({s for s in SECRETS for t in texts if s in t})


def exception_texts(exc: BaseException | None) -> list[str]:
    """``str`` and ``repr`` of an exception and of its whole cause/context chain."""
    texts: list[str] = []
    while exc is not None:
        texts += [str(exc), repr(exc)]
        exc = exc.__cause__ or exc.__context__
    return texts


CLOSED = free_port()  # nothing listens there


def url_id(url: str) -> str:
    """The test id of a URL: the same in every pytest-xdist worker, whatever port CLOSED got."""
    return url.replace(str(CLOSED), "CLOSED")


URLS = [
    f"rediss://someone:{PW}@127.0.0.1:{CLOSED}/0?ssl_password={SSL_PW}",
    f"rediss://someone:{quote(ODD_PW, safe='')}@127.0.0.1:{CLOSED}/0"
    f"?ssl_cert_reqs=required&ssl_password={quote(ODD_PW, safe='')}",
    f"redis://127.0.0.1:{CLOSED}/0?password={PW}",
    f"redis+sentinel://u:{PW}@127.0.0.1:{CLOSED}/m/0?sentinel_password={SENT_PW}",
    f"rediss+sentinel://:{PW}@127.0.0.1:{CLOSED},127.0.0.1:{CLOSED}/m"
    f"?sentinel_password={SENT_PW}&ssl_cert_reqs=required",
    f"rediss+cluster://u:{PW}@127.0.0.1:{CLOSED}?password={PW}",
]


@pytest.mark.parametrize("url", URLS, ids=url_id)
def test_repr_of_every_object_masks_every_password(url: str) -> None:
    queue = sd.Queue("masked", url=url)
    aqueue = sd.AsyncQueue("masked", url=url)
    worker = sd.Worker(queue)
    texts = [repr(queue), repr(aqueue), repr(worker), repr(queue.config), str(queue.config),
             repr(topology.parse_url(url))]
    assert leaked(*texts) == [], texts
    assert all("***" in t for t in texts), texts
    assert "127.0.0.1" in repr(queue)  # the rest of the URL is still shown


@pytest.mark.parametrize("url", [
    f"rediss://u:{PW}@127.0.0.1:99999/0?ssl_password={SSL_PW}",  # port out of range
    f"rediss://u:{PW}@127.0.0.1:{CLOSED}/0?db=x&ssl_password={SSL_PW}",  # db not a number
    f"rediss://u:{PW}@127.0.0.1:{CLOSED}/0?ssl_password={SSL_PW}&bogus=1",  # unknown option
    f"rediss+cluster://u:{PW}@127.0.0.1:{CLOSED}?ssl_password={SSL_PW}",  # not a cluster option
    f"redis+sentinel://127.0.0.1:{CLOSED}/m/zz?sentinel_password={SENT_PW}",  # bad db
    f"rediss://u:{PW}@127.0.0.1:{CLOSED}/0?ssl_cert_reqs=none&ssl_check_hostname=true"
    f"&ssl_password={SSL_PW}",  # contradictory checks
], ids=url_id)
def test_bad_urls_are_refused_without_echoing_secrets(url: str) -> None:
    with pytest.raises(sd.ConfigError) as refused:
        sd.Queue("masked", url=url)
    assert refused.value.field == "url"
    assert leaked(*exception_texts(refused.value)) == []
    for env_url, args in ((None, ["--url", url]), (url, [])):  # --url and STREAMDELAY_URL
        cli = subprocess.run(command("stats", "masked", *args), capture_output=True, text=True,
                             env=cli_env(env_url), cwd=ROOT, timeout=60)
        assert cli.returncode == 2, cli.stderr
        assert len(cli.stderr.splitlines()) == 1 and "url" in cli.stderr
        assert leaked(cli.stdout, cli.stderr) == [], cli.stderr


def test_connection_failures_mask_secrets_in_exceptions_and_cli() -> None:
    url = URLS[0]
    queue = sd.Queue("masked", url=url, retry_for=0.5, socket_timeout=0.5)
    with pytest.raises(sd.ConnectionFailed) as caught:
        queue.stats()
    texts = exception_texts(caught.value)

    async def async_attempt() -> None:
        async with sd.AsyncQueue("masked", url=url, retry_for=0.5, socket_timeout=0.5) as aq:
            await aq.enqueue("t", 1)

    with pytest.raises(sd.ConnectionFailed) as caught_async:
        asyncio.run(async_attempt())
    texts += exception_texts(caught_async.value)
    cli = subprocess.run(command("stats", "masked", "--url", url), capture_output=True,
                         text=True, env=cli_env(None), cwd=ROOT, timeout=60)
    assert cli.returncode == 1, cli.stderr
    texts += [cli.stdout, cli.stderr]
    assert leaked(*texts) == [], texts
    assert "ssl_password=***" in cli.stderr


def test_worker_over_tls_with_encrypted_client_key_never_logs_secrets(tmp_path: Path) -> None:
    """A real worker process whose URL carries a password and an ``ssl_password`` (the client
    key is encrypted with it; the server requires client certificates) runs a job; its log on
    stderr shows the URL masked."""
    certs = make_certificates(tmp_path / "certs", client_key_password=SSL_PW)
    with tls_redis(certs, tmp_path, "--requirepass", PW, clients_need_certs=True) as port:
        url = (f"rediss://:{PW}@127.0.0.1:{port}/0?ssl_ca_certs={certs.ca}"
               f"&ssl_certfile={certs.client_cert}&ssl_keyfile={certs.client_key}"
               f"&ssl_password={SSL_PW}")
        with sd.Queue("tlslog", url=url) as queue:
            queue.enqueue("cli.echo", {"n": 1}, id="over-tls")
        wrong_key_password = sd.Queue("tlslog", url=url.replace(SSL_PW, ODD_PW[::-1][:6]),
                                      retry_for=0.5)
        with pytest.raises(sd.StreamdelayError) as refused:  # the key cannot be decrypted
            wrong_key_password.stats()
        assert ODD_PW[::-1][:6] not in " ".join(exception_texts(refused.value))
        out = tmp_path / "out.txt"
        proc = subprocess.Popen(
            command("worker", "tests.support.apps.cli_worker_app:worker", "--url", url),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env=cli_env(None, CLI_APP_QUEUE="tlslog", CLI_APP_OUT=str(out)))
        try:
            assert wait_until(lambda: out.exists() and "done over-tls" in out.read_text(), 60)
        finally:
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "ssl_password=***" in stderr and ":***@127.0.0.1" in stderr, stderr
    assert leaked(stdout, stderr) == [], stderr


@pytest.mark.parametrize("text, shown", [
    (f"redis//someone:{PW}@127.0.0.1/0", "redis//someone:***@127.0.0.1/0"),  # no scheme
    (f"someone:{PW}@host:1", "someone:***@host:1"),
    (f"redis://u:{ODD_PW}@h:1/0", "redis://u:***@h:1/0"),  # raw @ : / ? & # in the password
    (f"rediss://h:1/0?ssl_password={quote(ODD_PW, safe='')}", "rediss://h:1/0?ssl_password=***"),
    ("rediss://h:1/0?ssl_password=p@ss/w:rd", "rediss://h:1/0?ssl_password=***"),
    (f"rediss://h:1/0?SSL_PASSWORD={PW}&db=2", "rediss://h:1/0?SSL_PASSWORD=***&db=2"),
    (f"unix:///tmp/r.sock?password={PW}&db=1", "unix:///tmp/r.sock?password=***&db=1"),
    (f"redis://{PW}@h:1", "redis://***@h:1"),  # a lone user-info part is hidden too
])
def test_mask_url_on_odd_urls(text: str, shown: str) -> None:
    assert mask_url(text) == shown
    assert mask_url(shown) == shown  # masking twice changes nothing
    if "://" in text:  # free text: URLs with a scheme (the library never echoes other forms)
        assert leaked(mask_text(f"failed at {text!r} ({text})")) == []
        assert "p@ss" not in mask_text(f"failed at {text!r} ({text})")


def test_cli_scrubs_secrets_it_was_given_from_any_text() -> None:
    url = f"rediss://u:{quote(ODD_PW, safe='')}@h:1/0?ssl_password={SSL_PW}"
    secrets = secrets_in(["stats", "q", "--url", url])
    assert {ODD_PW, quote(ODD_PW, safe=""), SSL_PW} <= set(secrets)
    said = scrub(f"redis said: bad key {SSL_PW!r}; AUTH {ODD_PW} <Redis(password={PW})>", secrets)
    assert leaked(said) == [] and said.count("***") == 3


def test_dispatcher_process_log_masks_secrets_while_redis_is_unreachable() -> None:
    proc = subprocess.Popen(command("dispatch", "masked", "--url", URLS[0]),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env=cli_env(None))
    try:  # the start line, then the first retry warning
        early = read_until(proc.stderr, "unavailable")  # type: ignore[arg-type]
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=60)
        stderr = early + stderr
    assert "dispatching queue masked" in stderr and "unavailable" in stderr, stderr
    assert "ssl_password=***" in stderr and "someone:***@" in stderr, stderr
    assert leaked(stdout, stderr) == [], stderr


# --- TLS host-name checks ----------------------------------------------------------------

def test_a_certificate_for_another_host_is_refused(tmp_path: Path) -> None:
    certs = make_certificates(tmp_path / "certs", server_names="DNS:other.example")
    with tls_redis(certs, tmp_path) as port:
        url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={certs.ca}"
        wrong_name = sd.Queue("tlsname", url=url, retry_for=0.5)
        with pytest.raises(sd.ConnectionFailed, match=r"(?i)mismatch|match|hostname"):
            wrong_name.stats()
        # the opt-out is explicit, in the URL, and then the same certificate is accepted
        with sd.Queue("tlsname", url=url + "&ssl_check_hostname=false") as unchecked:
            assert unchecked.enqueue("t", {"n": 1}, delay=60, id="j1").created
            assert unchecked.stats().total.delayed == 1


@pytest.mark.parametrize("url, expected", [
    ("rediss://127.0.0.1:6390/0", True),
    ("rediss://127.0.0.1:6390/0?ssl_cert_reqs=optional", True),
    ("rediss://127.0.0.1:6390/0?ssl_cert_reqs=none", False),
    ("rediss://127.0.0.1:6390/0?ssl_check_hostname=false", False),
    ("rediss+cluster://127.0.0.1:6390", True),
    ("rediss+cluster://127.0.0.1:6390?ssl_check_hostname=false", False),
    ("rediss+sentinel://127.0.0.1:6390/m", True),
])
def test_host_name_check_is_explicit(url: str, expected: bool) -> None:
    """Whatever redis-py's default, the TLS settings streamdelay passes name the check."""
    options = clients.node_options(topology.parse_url(url), 1.0)
    assert options["ssl_check_hostname"] is expected
    if topology.parse_url(url).kind == "cluster":
        return  # a cluster client connects when built: the options above are what it gets
    client = clients.sync_client(url, 1.0)
    assert client.connection_pool.connection_kwargs["ssl_check_hostname"] is expected
    aclient = clients.async_client(url, 1.0)
    assert aclient.connection_pool.connection_kwargs["ssl_check_hostname"] is expected
    client.close()


# --- Sentinel over TLS --------------------------------------------------------------------

def test_rediss_sentinel_speaks_tls_to_the_sentinel(tmp_path: Path) -> None:
    """The Sentinel has a TLS port only (``port 0``): a cleartext client cannot talk to it,
    so the sentinel password can only reach it encrypted; streamdelay works through it."""
    certs = make_certificates(tmp_path / "certs")
    with tls_sentinel(certs, tmp_path, data_password=PW, sentinel_password=SENT_PW) as port:
        cleartext = redis.Redis(port=port, password=SENT_PW, socket_timeout=1,
                                socket_connect_timeout=1)
        with pytest.raises(redis.ConnectionError):
            cleartext.ping()
        encrypted = redis.Redis(port=port, password=SENT_PW, ssl=True, ssl_ca_certs=str(certs.ca),
                                socket_timeout=5, decode_responses=True)
        assert wait_until(lambda: encrypted.execute_command(
            "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME) is not None, 10)
        encrypted.close()
        url = (f"rediss+sentinel://:{PW}@127.0.0.1:{port}/{MASTER_NAME}/0"
               f"?sentinel_password={SENT_PW}&ssl_ca_certs={certs.ca}")
        with sd.Queue("tlssentinel", url=url, retry_for=5.0) as queue:
            assert leaked(repr(queue)) == []
            ids = [r.id for r in queue.enqueue_many([sd.JobSpec("t", i) for i in range(10)])]
            worker = sd.Worker(queue, block=0.2)
            seen: list[str] = []
            worker.handler("t")(lambda job: seen.append(job.id))
            started = time.monotonic()
            asyncio.run(asyncio.wait_for(worker.serve(until_idle=True), 60))
            assert sorted(seen) == sorted(ids), time.monotonic() - started

        async def async_round_trip() -> sd.JobInfo | None:
            async with sd.AsyncQueue("tlssentinel", url=url, retry_for=5.0) as aqueue:
                await aqueue.enqueue("t", {"async": True}, id="a1", delay=60)
                return await aqueue.get("a1")

        info = asyncio.run(async_round_trip())
        assert info is not None and info.body == {"async": True}
