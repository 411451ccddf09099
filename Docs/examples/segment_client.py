#!/usr/bin/env python3
"""A DataIngest client in Python with nothing but the standard library.

Written from Docs/Protocol.md and Docs/SegmentFormat.md alone: it builds the
BSON by hand, puts a schema document into the segment header (declaring a
float, a list of embedded objects, a list of strings and an optional embedded
object), writes the segment stream, gzips it, logs in anonymously and uploads
it. `Tests/IngestServerTests/ForeignClientTests.swift` runs it against a real
development server, so it stays true.

    python3 Docs/examples/segment_client.py http://127.0.0.1:9090 dev-k3v9x0qa [MODE]

It writes segment format version 1 (frame checksums with `zlib.crc32`),
which servers keep accepting; MODE `version-2` writes the same segment as
version 2 (CRC-32C, computed bit by bit below, since the standard library
has none).

MODE is `declared` (the default: one Station with the schema above),
`version-2` (the same as format version 2),
`out-of-range` (its temperature does not fit a float), `unreadable-schema`
(a schema document of another shape), `empty` (a sealed segment with no
transaction: header and end frame only) or `trailing-bytes` (bytes after the
gzip member).

It prints one JSON line: {"status": <HTTP status>, "body": <the answer>}.
"""
import gzip
import http.client
import json
import os
import struct
import sys
import time
import uuid
import zlib
from urllib.parse import urlparse


# ---- BSON (bsonspec.org): the element types this client sends ----

class ObjectId:
    """12 bytes: 4 of seconds since 1970 (big-endian), 8 random."""
    def __init__(self):
        self.bytes = struct.pack(">I", int(time.time())) + os.urandom(8)


def cstring(text):
    data = text.encode("utf-8")
    assert b"\0" not in data
    return data + b"\0"


def element(name, value):
    key = cstring(name)
    if isinstance(value, bool):
        return b"\x08" + key + (b"\x01" if value else b"\x00")
    if isinstance(value, float):
        return b"\x01" + key + struct.pack("<d", value)       # double: also what a float property takes
    if isinstance(value, int):
        return b"\x12" + key + struct.pack("<q", value)       # int64
    if isinstance(value, str):
        data = value.encode("utf-8")
        return b"\x02" + key + struct.pack("<i", len(data) + 1) + data + b"\0"
    if isinstance(value, ObjectId):
        return b"\x07" + key + value.bytes
    if isinstance(value, dict):
        return b"\x03" + key + document(value)
    if isinstance(value, list):
        return b"\x04" + key + document({str(i): item for i, item in enumerate(value)})
    if value is None:
        return b"\x0a" + key
    raise TypeError(f"no BSON form for {value!r}")


def document(fields):
    """A BSON document of the (ordered) dict `fields`."""
    body = b"".join(element(name, value) for name, value in fields.items())
    return struct.pack("<i", len(body) + 5) + body + b"\0"


# ---- The segment stream (Docs/SegmentFormat.md) ----

MAGIC = b"DISEG\r\n\x1a"


def crc32c(data):
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), bit by bit."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


# Format version 1 checks frames with CRC-32, version 2 with CRC-32C.
CHECKSUMS = {1: zlib.crc32, 2: crc32c}


def frame(frame_type, payload, version=1):
    head = bytes([frame_type]) + struct.pack("<I", len(payload)) + payload
    return head + struct.pack("<I", CHECKSUMS[version](head))


def sealed_segment(store_id, number, schema, transactions, version=1):
    """The gzip file of one sealed segment; `transactions` is a list of lists of (collection, object)."""
    header = struct.pack("<HH", version, 0) + store_id.bytes + struct.pack("<Qq", number, int(time.time() * 1000)) + schema
    stream = MAGIC + frame(0x48, header, version)
    records = 0
    for index, objects in enumerate(transactions):
        for collection, fields in objects:
            name = collection.encode("utf-8")
            stream += frame(0x52, struct.pack("<H", len(name)) + name + document(fields), version)
        stream += frame(0x43, struct.pack("<QI", (number << 32) | index, len(objects)), version)
        records += len(objects)
    stream += frame(0x45, struct.pack("<QQ", records, len(transactions)), version)
    return gzip.compress(stream)


# ---- The header's schema document (Docs/SegmentFormat.md, "The schema document") ----

def prop(name, type_, **options):
    fields = {"name": name, "type": type_}
    fields.update(options)
    return fields


SCHEMA = {"objects": [
    {"name": "Station", "kind": "asymmetric", "primaryKey": "_id", "properties": [
        prop("_id", "objectId"),
        prop("deviceId", "string"),
        prop("temperature", "float"),
        prop("tags", "string", collection="list"),
        prop("readings", "object", objectClass="Reading", collection="list"),
        prop("location", "object", objectClass="Location", optional=True),
    ]},
    {"name": "Reading", "kind": "embedded", "properties": [
        prop("value", "double"),
        prop("note", "string", optional=True),
    ]},
    {"name": "Location", "kind": "embedded", "properties": [
        prop("lat", "double"),
        prop("lon", "double"),
    ]},
]}


def station(temperature):
    return {"_id": ObjectId(), "deviceId": "py-1", "temperature": temperature, "tags": ["roof", "north"],
            "readings": [{"value": 1.5}, {"value": 2.5, "note": "gust"}], "location": {"lat": 47.5, "lon": 8.25}}


# ---- HTTP (Docs/Protocol.md) ----

def call(base_url, method, path, body=b"", headers=None):
    url = urlparse(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def main():
    base_url, app_id = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "declared"
    status, body = call(base_url, "POST", f"/api/client/v2.0/app/{app_id}/auth/providers/anon-user/login", b"{}",
                        {"Content-Type": "application/json"})
    assert status == 200, (status, body)
    token = json.loads(body)["access_token"]
    if mode == "unreadable-schema":
        # A plausible shape that is not the documented one: refused, not ignored.
        schema = document({"classes": {"Station": {"temperature": "float"}}})
    else:
        schema = document(SCHEMA)
    temperature = 1e300 if mode == "out-of-range" else 21.25
    transactions = [] if mode == "empty" else [[("Station", station(temperature))]]
    segment = sealed_segment(uuid.uuid4(), 1, schema, transactions, version=2 if mode == "version-2" else 1)
    if mode == "trailing-bytes":
        segment += b"not gzip"
    status, body = call(base_url, "POST", f"/api/client/v2.0/app/{app_id}/ingest", segment,
                        {"Authorization": f"Bearer {token}", "Content-Type": "application/gzip"})
    print(json.dumps({"status": status, "body": json.loads(body)}))


if __name__ == "__main__":
    main()
