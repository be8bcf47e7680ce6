"""The nemesis's network (docs/reliability.md#nemesis): one network namespace per 'host' (a
worker, a dispatcher, ``serve``), joined to the machine's own namespace by a veth pair on a
private /30 of 10.214.0.0/16, a range only this rig uses (``tests/support/outage_rig.py`` uses
10.213.0.0/16, so both can run at once). Redis runs in the machine's namespace and listens on
the host-side addresses (``Net.redis_bind_args``); a process in host ``h`` reaches it at
``h.host_ip``.

Faults on one host's link, both directions:

- loud cut: both ends of the veth ``ip link set down``: the namespace loses its route, a new
  connection fails at once with "Network is unreachable", packets in flight are lost;
- silent cut: a ``blackhole`` qdisc on both ends: every packet (ARP too) vanishes, nothing
  answers, no RST, no ICMP: a client sees timeouts only;
- degraded link: an ``htb`` class shaping to ``rate_kbit`` on both ends, and with ``loss_pct``
  a share of the IP packets (chosen by the low 8 bits of the IP ID, which advances per segment,
  so a retransmission usually passes) classified by ``u32`` filters into a class whose leaf
  qdisc is a ``blackhole``.

This kernel has no ``netem`` and no ``gact``/``police`` actions; it has ``htb``, ``tbf``,
``pfifo``, ``blackhole`` and the ``u32`` classifier, which is what the faults above are made of.
What ``netem`` would add is in docs/reliability.md#nemesis.

Everything created is listed first in an owner file under ``STATE_DIR`` (the pid of the run);
``close()`` removes it, and ``cleanup_stale()`` removes what a run killed before its
``close()`` left behind (namespaces ``sd-nem-*``, links ``sdnem*``), never a live run's
(``python -m tests.system.nemesis.net`` does it by hand).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

RANGE = "10.214.0.0/16"
NS_PREFIX = "sd-nem-"
LINK_PREFIX = "sdnem"
HOSTS_PER_NET = 64  # /30s in one 10.214.<k>.0/24
STATE_DIR = Path(tempfile.gettempdir()) / "sd-nem"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,30}$")


class NetUnavailable(RuntimeError):
    """The nemesis's network faults cannot run here (not root, no ``ip`` or ``tc``)."""


def require_root() -> None:
    """Raise ``NetUnavailable`` naming what is missing: root, ``ip`` (iproute2) or ``tc``."""
    missing = []
    if os.geteuid() != 0:
        missing.append("root (network namespaces and veth pairs need CAP_NET_ADMIN)")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            missing.append(f"the {tool} command (iproute2)")
    if missing:
        raise NetUnavailable("the nemesis's network faults need " + " and ".join(missing))


def _run(*argv: str, check: bool = True) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=15, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class NetHost:
    """One host of the rig: its namespace, the host-side end of its veth pair (in the machine's
    namespace), the namespace-side end, its address and the host-side address (where it
    reaches Redis)."""

    name: str
    ns: str
    veth: str
    inner: str
    ip: str
    host_ip: str

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this host's namespace (``ip netns exec`` execs it: the process
        id of the Popen is the program's own)."""
        return ["ip", "netns", "exec", self.ns, *argv]


class Net:
    """The namespaces of one run on 10.214.<subnet_index>.0/24 (64 hosts of a /30 each).
    A context manager; ``close()`` removes everything and may be called again."""

    def __init__(self, name: str, subnet_index: int) -> None:
        require_root()
        if not _NAME.match(name):
            raise ValueError(f"net name {name!r}: lowercase letters, digits, - and _ only")
        if not 0 <= subnet_index <= 255:
            raise ValueError("subnet_index is the third octet of 10.214.k.0/24: 0..255")
        cleanup_stale()
        self.name, self.index = name, subnet_index
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.owner = STATE_DIR / f"net-{subnet_index}.json"
        try:  # exclusive: two live runs on one subnet would fight over the same links
            with self.owner.open("x") as file:
                json.dump({"pid": os.getpid(), "ns": [], "links": []}, file)
        except FileExistsError:
            raise RuntimeError(f"10.214.{subnet_index}.0/24 is in use by a live run "
                               f"({self.owner}): pick another subnet_index") from None
        self.hosts: dict[str, NetHost] = {}
        self._degraded: dict[str, tuple[int, float | None]] = {}
        self._closed = False

    def _record(self) -> None:
        hosts = list(self.hosts.values())
        self.owner.write_text(json.dumps({
            "pid": os.getpid(), "ns": [h.ns for h in hosts], "links": [h.veth for h in hosts]}))

    def host(self, name: str) -> NetHost:
        """A new host ``name``: namespace ``sd-nem-<net>-<k>-<name>``, a veth pair, the ns side
        10.214.k.(4j+2)/30 and the host side 10.214.k.(4j+1)/30, both up, loopback up."""
        if self._closed:
            raise RuntimeError("this Net is closed")
        if name in self.hosts:
            return self.hosts[name]
        if not _NAME.match(name):
            raise ValueError(f"host name {name!r}: lowercase letters, digits, - and _ only")
        j = len(self.hosts)
        if j >= HOSTS_PER_NET:
            raise RuntimeError(f"at most {HOSTS_PER_NET} hosts per Net")
        prefix, link = f"10.214.{self.index}", f"{LINK_PREFIX}{self.index}"
        host = NetHost(name, f"{NS_PREFIX}{self.name}-{self.index}-{name}", f"{link}h{j}",
                       f"{link}n{j}", f"{prefix}.{4 * j + 2}", f"{prefix}.{4 * j + 1}")
        self.hosts[name] = host
        self._record()  # before creating: a crash from here on leaves listed leftovers only
        _run("ip", "netns", "add", host.ns)
        _run("ip", "link", "add", host.veth, "type", "veth", "peer", "name", host.inner)
        _run("ip", "link", "set", host.inner, "netns", host.ns)
        # one TCP segment per packet (no 64 KB GSO bursts): the loss of a degraded link then
        # drops segments, as a real link does, not whole bursts
        _run("ip", "link", "set", host.veth, "gso_max_segs", "1")
        _run("ip", "-n", host.ns, "link", "set", host.inner, "gso_max_segs", "1")
        _run("ip", "addr", "add", f"{host.host_ip}/30", "dev", host.veth)
        _run("ip", "link", "set", host.veth, "up")
        _run("ip", "-n", host.ns, "addr", "add", f"{host.ip}/30", "dev", host.inner)
        _run("ip", "-n", host.ns, "link", "set", host.inner, "up")
        _run("ip", "-n", host.ns, "link", "set", "lo", "up")
        return host

    def _get(self, host: NetHost | str) -> NetHost:
        return self.hosts[host if isinstance(host, str) else host.name]

    def redis_bind_args(self) -> list[str]:
        """``redis-server`` options to listen on loopback and every host-side address created
        so far (create the hosts first), reachable from the namespaces."""
        return ["--bind", "127.0.0.1", *(h.host_ip for h in self.hosts.values()),
                "--protected-mode", "no"]

    def _tc(self, host: NetHost, *args: str, check: bool = True) -> None:
        """``tc`` on both ends of ``host``'s link (the host side, then inside the namespace)."""
        _run("tc", *args[:2], "dev", host.veth, *args[2:], check=check)
        _run("ip", "netns", "exec", host.ns, "tc", *args[:2], "dev", host.inner, *args[2:],
             check=check)

    def cut(self, host: NetHost | str, silent: bool) -> None:
        """Partition ``host`` from everything: loud (both ends ``ip link set down``) or silent
        (a ``blackhole`` qdisc on both ends: every packet dropped, nothing answers)."""
        h = self._get(host)
        if silent:
            self._tc(h, "qdisc", "replace", "root", "blackhole")
        else:
            _run("ip", "link", "set", h.veth, "down")
            _run("ip", "-n", h.ns, "link", "set", h.inner, "down")

    def heal(self, host: NetHost | str) -> None:
        """Undo every fault on ``host``'s link: both ends up, no qdisc (back to the veth's
        default), so no cut and no shaping."""
        h = self._get(host)
        self._degraded.pop(h.name, None)
        self._tc(h, "qdisc", "del", "root", check=False)
        _run("ip", "link", "set", h.veth, "up")
        _run("ip", "-n", h.ns, "link", "set", h.inner, "up")

    def degrade(self, host: NetHost | str, rate_kbit: int, loss_pct: float | None) -> None:
        """Shape ``host``'s link to ``rate_kbit`` each way (``htb``) and, with ``loss_pct``,
        drop about that share of its IP packets (in steps of 1/256: the low 8 bits of the IP
        ID, see the module docstring)."""
        h = self._get(host)
        if rate_kbit <= 0:
            raise ValueError("rate_kbit must be positive")
        self._tc(h, "qdisc", "del", "root", check=False)
        rate = f"{rate_kbit}kbit"
        self._tc(h, "qdisc", "add", "root", "handle", "1:", "htb", "default", "10", "r2q", "1")
        self._tc(h, "class", "add", "parent", "1:", "classid", "1:10", "htb", "rate", rate)
        if loss_pct:
            self._tc(h, "class", "add", "parent", "1:", "classid", "1:20", "htb", "rate", rate)
            self._tc(h, "qdisc", "add", "parent", "1:20", "handle", "20:", "blackhole")
            # IP ID 0 passes: Linux sends a SYN-ACK (and other replies without a socket of
            # their own) with ID 0 and DF, so dropping ID 0 would refuse every connection
            self._tc(h, "filter", "add", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
                     "match", "u16", "0x0000", "0xffff", "at", "4", "classid", "1:10")
            for value, mask in id_prefixes(round(min(loss_pct, 100.0) * 2.56)):
                self._tc(h, "filter", "add", "parent", "1:", "protocol", "ip", "prio", "2",
                         "u32", "match", "u16", f"0x{value:04x}", f"0x{mask:04x}", "at", "4",
                         "classid", "1:20")
        self._degraded[h.name] = (rate_kbit, loss_pct)

    def close(self) -> None:
        """Remove every namespace and link of this Net (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for h in self.hosts.values():
            _run("ip", "link", "del", h.veth, check=False)
            _run("ip", "netns", "del", h.ns, check=False)
        self.owner.unlink(missing_ok=True)

    def __enter__(self) -> Net:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def free_subnet_index(lo: int = 0, hi: int = 255) -> int:
    """The first subnet index in ``lo..hi`` no live run holds (a ``Net`` made with it can
    still lose the race to another run starting at the same moment: it then says so)."""
    cleanup_stale()
    for index in range(lo, hi + 1):
        if not (STATE_DIR / f"net-{index}.json").exists():
            return index
    raise RuntimeError(f"every subnet 10.214.{lo}-{hi}.0/24 is held by a live run")


def id_prefixes(n: int) -> list[tuple[int, int]]:
    """(value, mask) pairs on a 16-bit field that match ``n`` of the 256 values of its low
    byte, spread evenly: the values whose bit-reversed low byte is below ``n`` (n = 32: every
    8th ID). The IP ID counts up by one per packet, so the lost packets are spread out, not a
    burst of ``n`` in a row (which would drop a SYN and all its retries)."""
    pairs, start = [], 0
    for bit in range(8, -1, -1):
        size = 1 << bit
        if n & size and start < 256:
            pairs.append((_reverse8(start), _reverse8(0xFF & ~(size - 1))))
            start += size
    return pairs


def _reverse8(byte: int) -> int:
    return int(f"{byte:08b}"[::-1], 2)


def _listed() -> tuple[set[str], set[str], list[tuple[Path, object]]]:
    """The namespaces and links live runs own, and the owner files of dead runs."""
    live_ns: set[str] = set()
    live_links: set[str] = set()
    dead: list[tuple[Path, object]] = []
    for owner in STATE_DIR.glob("net-*.json") if STATE_DIR.is_dir() else ():
        try:
            state = json.loads(owner.read_text() or "{}")
        except (OSError, ValueError):
            state = {}
        if state.get("pid") and _alive(int(state["pid"])):
            live_ns.update(state.get("ns", []))
            live_links.update(state.get("links", []))
        else:
            dead.append((owner, state.get("pid")))
    return live_ns, live_links, dead


def cleanup_stale() -> list[str]:
    """Remove the ``sd-nem-*`` namespaces and ``sdnem*`` links no live run owns (what a killed
    run left); returns their names."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return []
    # the names first, the owners after: a run records a name before it creates it, so a
    # namespace made between the two reads is already in its owner file
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                timeout=15, check=False).stdout.split("\n")
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           timeout=15, check=False).stdout.split("\n")
    live_ns, live_links, dead = _listed()
    removed = []
    for line in namespaces:
        ns = line.split(" ", 1)[0].strip()
        if ns.startswith(NS_PREFIX) and ns not in live_ns:
            _run("ip", "netns", "del", ns, check=False)
            removed.append(ns)
    for line in links:
        match = re.match(rf"^\d+: ({LINK_PREFIX}\d+[hn]\d+)[@:]", line)
        if match and match.group(1) not in live_links:
            _run("ip", "link", "del", match.group(1), check=False)
            removed.append(match.group(1))
    for owner, pid in dead:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(owner.read_text() or "{}").get("pid") == pid:  # not a new run's
                owner.unlink()
    return removed


if __name__ == "__main__":  # ``python -m tests.system.nemesis.net``: clean up after a killed run
    require_root()
    print("\n".join(cleanup_stale()) or "nothing left over")
