"""The workers hash's values, written and read back without a server
(streamdelay/protocol/fleet_records.py, docs/keys.md#fleet): the bound on running ids, expired and
foreign values skipped."""

from __future__ import annotations

from streamdelay.protocol.fleet_records import RUNNING_SHOWN, _parse, info_blob


def blob(running: int, state: str = "running") -> str:
    return info_blob(host="h", pid=7, version="1.2", group="g", topics=["b", "a"],
                     concurrency=500, started_ms=1_000,
                     running=[(f"j{n}", 2.0 + n) for n in reversed(range(running))],
                     state=state)  # type: ignore[arg-type]


def test_an_entry_keeps_the_oldest_running_ids_and_counts_them_all() -> None:
    info = _parse("w1", f"9000|5000|{blob(RUNNING_SHOWN + 10)}", now_ms=8000)
    assert info is not None
    assert len(info.running) == RUNNING_SHOWN and info.running_count == RUNNING_SHOWN + 10
    assert info.running[:2] == ("j0", "j1") and info.running_since[:2] == (2.0, 3.0)
    assert (info.started, info.last_seen) == (1.0, 5.0)
    assert info.topics == ("a", "b") and info.host == "h" and info.pid == 7


def test_expired_and_foreign_values_are_skipped() -> None:
    assert _parse("w1", f"7999|5000|{blob(1)}", now_ms=8000) is None  # lease over
    assert _parse("w1", "9000|5000|not json", now_ms=8000) is None
    assert _parse("w1", "garbage", now_ms=8000) is None
    assert _parse("w1", '9000|5000|{"running": [[1]]}', now_ms=8000) is None


def test_an_unknown_state_reads_as_running_and_no_start_as_the_last_renewal() -> None:
    info = _parse("w1", f"9000|5000|{blob(0, state='dancing')}", now_ms=8000)
    assert info is not None and info.state == "running"
    pulled = _parse("p1", '9000|5000|{"kind": "pull", "started": 0}', now_ms=8000)
    assert pulled is not None and pulled.started == pulled.last_seen == 5.0
    assert pulled.kind == "pull" and pulled.pid == 0 and pulled.running == ()
