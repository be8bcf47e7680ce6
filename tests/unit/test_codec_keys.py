"""Key layout (one hash tag per partition, stable partitioning), the body codec, the job blob and
record format (what Redis stores, and its memory per job:
tests/integration/test_codec_keys_stored.py)."""

from __future__ import annotations

import zlib

import msgspec
import pytest

import streamdelay as sd
from streamdelay.protocol.codec import (
    FORMAT_BYTES,
    FORMAT_JSON,
    FORMAT_MSGPACK,
    blob_backoff,
    decode_blob,
    decode_body,
    encode_blob,
    encode_body,
    parse_record,
)
from streamdelay.protocol.keys import PartitionKeys, partition_keys, partition_of

pytestmark = pytest.mark.timeout(90)


class Order(msgspec.Struct):
    """A typed body."""

    order_id: int
    note: str = ""


# --- keys ------------------------------------------------------------------------------------

def hash_tag(key: str) -> str:
    """What Redis Cluster hashes: the text between the first '{' and the next '}'."""
    start = key.index("{")
    return key[start + 1:key.index("}", start)]


def test_every_key_of_a_partition_shares_one_hash_tag() -> None:
    keys = PartitionKeys("orders", 3)
    names = [*keys.script_keys(), keys.meta, keys.stream("order.close"), keys.dead("a:b")]
    assert {hash_tag(k) for k in names} == {"orders#3"}
    assert len(set(names)) == len(names)
    assert all(k.startswith("sd:{orders#3}:") for k in names)
    tags = {hash_tag(k.delayed) for k in partition_keys("orders", 8)}
    assert len(tags) == 8


def test_partition_of_is_a_stable_crc32() -> None:
    assert partition_of("close-42", 1) == 0
    assert partition_of("close-42", 7) == zlib.crc32(b"close-42") % 7
    counts = [0] * 4
    for i in range(4000):
        counts[partition_of(f"job-{i}", 4)] += 1
    assert all(800 < c < 1200 for c in counts)




# --- codec -----------------------------------------------------------------------------------

@pytest.mark.parametrize("serializer", ["json", "msgpack"])
def test_bodies_round_trip_through_each_serializer(serializer: str) -> None:
    body = {"order_id": 42, "items": [1.5, None, True], "note": "ünïcode|pipe"}
    fmt, data = encode_body(body, serializer, 1 << 20)  # type: ignore[arg-type]
    assert fmt == (FORMAT_JSON if serializer == "json" else FORMAT_MSGPACK)
    assert decode_body(fmt, data) == body
    assert decode_body(fmt, data, Order) == Order(42, "ünïcode|pipe")
    with pytest.raises(sd.BodyDecodeError, match="body"):
        decode_body(fmt, encode_body({"order_id": "x"}, serializer, 100)[1], Order)  # type: ignore[arg-type]


def test_json_bodies_are_plain_json_readable_anywhere() -> None:
    fmt, data = encode_body({"a": [1, "x"]}, "json", 100)
    assert (fmt, data) == (FORMAT_JSON, b'{"a":[1,"x"]}')


def test_raw_bytes_pass_untouched_and_refuse_a_struct_type() -> None:
    raw = bytes(range(256))
    for value in (raw, bytearray(raw), memoryview(raw)):
        assert encode_body(value, "json", 1000) == (FORMAT_BYTES, raw)
    assert decode_body(FORMAT_BYTES, raw) == raw
    with pytest.raises(sd.BodyDecodeError):
        decode_body(FORMAT_BYTES, raw, Order)


def test_body_size_limit_and_unencodable_bodies() -> None:
    assert encode_body("x" * 8, "json", 10)[1] == b'"xxxxxxxx"'
    with pytest.raises(sd.BodyEncodeError, match=r"^body: 11 bytes is over the limit of 10"):
        encode_body("x" * 9, "json", 10)
    with pytest.raises(sd.BodyEncodeError, match=r"^body: "):
        encode_body(object(), "msgpack", 1000)
    with pytest.raises(sd.BodyDecodeError, match="unknown body format"):
        decode_body("z", b"{}")


def test_blob_keeps_headers_and_backoff_and_drops_trailing_defaults() -> None:
    plain = encode_blob(FORMAT_JSON, b"1", {}, None)
    assert msgspec.msgpack.decode(plain) == ["j", b"1"]
    blob = decode_blob(encode_blob(FORMAT_JSON, b"1", {"trace": "t"}, [0, 120.5]))
    assert (blob.headers, blob_backoff(blob)) == ({"trace": "t"}, [0.0, 120.5])
    exact = decode_blob(encode_blob(FORMAT_JSON, b"1", {}, sd.Backoff(2, 60, jitter=False)))
    assert blob_backoff(exact) == sd.Backoff(2.0, 60.0, jitter=False)
    assert blob_backoff(decode_blob(plain)) is None
    with pytest.raises(sd.BodyDecodeError, match="envelope"):
        decode_blob(b"\xc1not msgpack")


def test_record_format_is_parsed_and_malformed_records_are_refused() -> None:
    blob = encode_blob(FORMAT_JSON, b'"a|b|c"', {}, None)
    raw = b"s|2|1700000000123|1700000000000|60000|10|1700000000123-0|order.close|" + blob
    record = parse_record(raw)
    assert (record.state, record.attempts, record.due, record.created) == (
        "s", 2, 1700000000123, 1700000000000)
    assert (record.ttr_ms, record.max_attempts, record.entry, record.topic) == (
        60000, 10, "1700000000123-0", "order.close")
    assert record.blob == blob  # the blob may hold '|' bytes
    for bad in (b"", b"q|0|0|0|0|0||t|", b"d|x|0|0|0|0||t|", b"d|0|0"):
        with pytest.raises(sd.StreamdelayError, match="envelope"):
            parse_record(bad)




# --- memory ----------------------------------------------------------------------------------



@pytest.mark.parametrize("size", [0, 1, 31, 32, 255, 256, 65_535, 65_536, 70_000])
@pytest.mark.parametrize("fmt", ["j", "m", "b"])
def test_a_blob_without_headers_or_backoff_is_packed_as_msgpack_packs_it(fmt: str, size: int
                                                                         ) -> None:
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    blob = encode_blob(fmt, body, {}, None)
    assert blob == msgspec.msgpack.encode([fmt, body])
    assert decode_blob(blob).body == body and decode_blob(blob).fmt == fmt
