"""TLS-only redis-server and Sentinel processes for the tests, with throw-away certificates.

Certificates are made with the ``openssl`` CLI; the tests that use them are skipped (with the
reason) when ``openssl`` is missing or redis-server is built without TLS.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.redis_server import free_port

MASTER_NAME = "tlsmaster"


@dataclass(frozen=True)
class Certificates:
    """A CA, a server certificate/key signed by it and a client certificate/key."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def _openssl(directory: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


def _signed(directory: Path, name: str, subject_alt: str, key_password: str | None) -> None:
    key_args = (["-passout", f"pass:{key_password}"] if key_password else ["-nodes"])
    _openssl(directory, "req", "-newkey", "rsa:2048", *key_args, "-keyout", f"{name}.key",
             "-out", f"{name}.csr", "-subj", f"/CN={name}")
    (directory / f"{name}.cnf").write_text(f"subjectAltName={subject_alt}\n")
    _openssl(directory, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", "-extfile", f"{name}.cnf")


def make_certificates(directory: Path, *, server_names: str = "IP:127.0.0.1,DNS:localhost",
                      client_key_password: str | None = None) -> Certificates:
    """A CA, a server certificate for ``server_names`` (subjectAltName syntax) and a client
    certificate whose key is encrypted with ``client_key_password`` when given."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is not installed (needed to make test certificates)")
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(directory, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.crt", "-days", "2", "-subj", "/CN=streamdelay-test-ca")
    _signed(directory, "server", server_names, None)
    _signed(directory, "client", "DNS:client", client_key_password)
    return Certificates(directory / "ca.crt", directory / "server.crt", directory / "server.key",
                        directory / "client.crt", directory / "client.key")


def tls_args(certs: Certificates, port: int, *, clients_need_certs: bool = False) -> list[str]:
    """redis-server arguments for a TLS-only listener on ``port`` (the plain port is closed)."""
    return ["--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
            "--tls-cert-file", str(certs.server_cert), "--tls-key-file", str(certs.server_key),
            "--tls-ca-cert-file", str(certs.ca),
            "--tls-auth-clients", "yes" if clients_need_certs else "no"]


@contextlib.contextmanager
def server_process(args: list[str], directory: Path, name: str,
                   ready: str = "Ready to accept connections") -> Iterator[None]:
    """Run ``redis-server ARGS`` until the block ends; waits for ``ready`` in its log."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    proc = subprocess.Popen(["redis-server", *args, "--logfile", str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while ready not in (log.read_text() if log.exists() else ""):
            if proc.poll() is not None:
                out = (proc.stdout.read() if proc.stdout else b"").decode(errors="replace")
                if "tls" in out.lower() or "directive" in out.lower():
                    pytest.skip(f"redis-server is built without TLS support: {out.strip()[:200]}")
                raise RuntimeError(f"redis-server {name} did not start: {out}")
            assert time.monotonic() < deadline, f"redis-server {name} did not start"
            time.sleep(0.02)
        yield
    finally:
        proc.kill()
        proc.wait(10)


@contextlib.contextmanager
def tls_redis(certs: Certificates, directory: Path, *extra: str,
              clients_need_certs: bool = False) -> Iterator[int]:
    """A redis-server that speaks TLS only; yields its port."""
    port = free_port()
    args = [*tls_args(certs, port, clients_need_certs=clients_need_certs), "--save", "",
            "--appendonly", "no", "--dir", str(directory), *extra]
    with server_process(args, directory, f"redis-{port}"):
        yield port


@contextlib.contextmanager
def tls_sentinel(certs: Certificates, directory: Path, *, data_password: str,
                 sentinel_password: str) -> Iterator[int]:
    """A TLS-only master (``requirepass data_password``) and a TLS-only Sentinel watching it
    (``requirepass sentinel_password``, ``port 0``); yields the Sentinel's TLS port."""
    with tls_redis(certs, directory / "master", "--requirepass", data_password) as master_port:
        port = free_port()
        config = directory / "sentinel.conf"
        config.write_text("\n".join([
            "port 0", f"tls-port {port}", "bind 127.0.0.1", f"dir {directory}",
            f"tls-cert-file {certs.server_cert}", f"tls-key-file {certs.server_key}",
            f"tls-ca-cert-file {certs.ca}", "tls-auth-clients no", "tls-replication yes",
            f"requirepass {sentinel_password}",
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} 1",
            f"sentinel auth-pass {MASTER_NAME} {data_password}", ""]))
        with server_process([str(config), "--sentinel"], directory, "sentinel", "+monitor"):
            yield port
