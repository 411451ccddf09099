#!/usr/bin/env python3
"""Writes the committed seed inputs under Fuzz/corpus/<target>/.

Run from anywhere: python3 Fuzz/make-seeds.py. Deterministic: it rewrites the
same files. BSON and Extended JSON seeds come from the BSON corpus in
../shared/testdata/bson-corpus (if present); the rest are built here by
following Docs/SegmentFormat.md and Docs/Protocol.md.
"""
import base64, gzip, hashlib, hmac, json, os, struct, sys, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus")
PER_FILE = 4
BSON_CORPUS = os.path.join(ROOT, "..", "shared", "testdata", "bson-corpus")


def write(target, name, data):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


# --- BSON encoding (the few types the seeds need) ---
def cstring(s):
    return s.encode() + b"\x00"


def element(key, value):
    if isinstance(value, bool):
        return b"\x08" + cstring(key) + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"\x10" + cstring(key) + struct.pack("<i", value)
    if isinstance(value, float):
        return b"\x01" + cstring(key) + struct.pack("<d", value)
    if isinstance(value, str):
        raw = value.encode() + b"\x00"
        return b"\x02" + cstring(key) + struct.pack("<i", len(raw)) + raw
    if isinstance(value, bytes) and len(value) == 12:
        return b"\x07" + cstring(key) + value
    if isinstance(value, list):
        return b"\x04" + cstring(key) + document({str(i): v for i, v in enumerate(value)})
    if isinstance(value, dict):
        return b"\x03" + cstring(key) + document(value)
    raise TypeError(value)


def document(fields):
    body = b"".join(element(k, v) for k, v in fields.items())
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


# --- Segment stream ---
MAGIC = b"DISEG\r\n\x1a"


def frame(kind, payload):
    head = bytes([kind]) + struct.pack("<I", len(payload)) + payload
    return head + struct.pack("<I", zlib.crc32(head))


def segment(records, schema=b"\x05\x00\x00\x00\x00", end=True, number=7):
    out = MAGIC
    store_id = bytes(range(16))
    out += frame(0x48, struct.pack("<HH", 1, 0) + store_id + struct.pack("<Qq", number, 1_700_000_000_000) + schema)
    transaction = 0
    count = 0
    for group in records:
        for collection, doc in group:
            name = collection.encode()
            out += frame(0x52, struct.pack("<H", len(name)) + name + doc)
            count += 1
        out += frame(0x43, struct.pack("<QI", (number << 32) | transaction, len(group)))
        transaction += 1
    if end:
        out += frame(0x45, struct.pack("<QQ", count, transaction))
    return out


def gz(data):
    return gzip.compress(data, compresslevel=6, mtime=0)


def sensor(i):
    return document({
        "_id": bytes([0x65, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, i]),
        "deviceId": "station-%d" % i,
        "temperatureInFahrenheit": 70.5 + i,
        "windSpeedInMph": i,
        "readings": [1.0, 2.5],
        "location": {"latitude": 52.5, "longitude": 13.4},
        "history": [],
    })


def client_schema():
    # The header schema as the client writes it (Schema+BSON).
    return document({"objects": [{
        "name": "WeatherSensor", "kind": "asymmetric", "primaryKey": "_id",
        "properties": [
            {"name": "_id", "type": "objectId"},
            {"name": "deviceId", "type": "string"},
        ]}]})


def bson_and_extjson():
    if not os.path.isdir(BSON_CORPUS):
        print("no BSON corpus at %s; BSON and Extended JSON seeds skipped" % BSON_CORPUS, file=sys.stderr)
        return
    for name in sorted(os.listdir(BSON_CORPUS)):
        if not name.endswith(".json"):
            continue
        stem = name[:-5]
        with open(os.path.join(BSON_CORPUS, name)) as f:
            spec = json.load(f)
        # A few cases of each type keep the committed seed set small.
        for i, case in enumerate(spec.get("valid", [])[:PER_FILE]):
            for field in ("canonical_bson", "degenerate_bson"):
                if field in case:
                    write("bson", "%s-%d-%s" % (stem, i, field.split("_")[0]), bytes.fromhex(case[field]))
            for field in ("canonical_extjson", "relaxed_extjson"):
                if field in case:
                    write("extjson", "%s-%d-%s" % (stem, i, field.split("_")[0]), case[field])
        for i, case in enumerate(spec.get("decodeErrors", [])[:PER_FILE]):
            write("bson", "%s-error-%d" % (stem, i), bytes.fromhex(case["bson"]))
        for i, case in enumerate(spec.get("parseErrors", [])[:PER_FILE]):
            if isinstance(case.get("string"), str) and case["string"].startswith("{"):
                write("extjson", "%s-parse-error-%d" % (stem, i), case["string"])


def segments():
    one = segment([[("WeatherSensor", sensor(1))]])
    two = segment([[("WeatherSensor", sensor(1)), ("WeatherSensor", sensor(2))], [("WeatherSensor", sensor(3))]],
                  schema=client_schema())
    empty = segment([])
    active = segment([[("WeatherSensor", sensor(4))]], end=False)
    # Mode byte first (see Fuzz/segment/main.swift and Fuzz/upload/main.swift).
    write("segment", "gzip-one", b"\x00" + gz(one))
    write("segment", "gzip-two-client-schema", b"\x00" + gz(two))
    write("segment", "raw-one", b"\x01" + one)
    write("segment", "raw-empty", b"\x01" + empty)
    write("segment", "active", b"\x02" + active)
    write("segment", "raw-to-gzip-two", b"\x03" + two)
    write("upload", "gzip-one", b"\x00" + gz(one))
    write("upload", "gzip-two-client-schema", b"\x00" + gz(two))
    write("upload", "raw-two-client-schema", b"\x01" + two)
    bad = document({"_id": "not-an-object-id", "deviceId": 5})
    write("upload", "raw-rejected", b"\x01" + segment([[("WeatherSensor", bad), ("Unknown", sensor(5))]]))


def http():
    requests = {
        "get": b"GET /api/status?x=1&y=%20z HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "post-length": b"POST /api/client/v2.0/app/a/ingest HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\n"
                       b"Content-Type: application/gzip\r\nContent-Length: 5\r\n\r\nhello",
        "chunked": b"POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n"
                   b"0\r\nTrailer: v\r\n\r\n",
        "expect": b"PUT /x HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
        "pipelined": b"GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        "http10": b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "smuggle": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    }
    for name, data in requests.items():
        write("http", name + "-whole", b"\x00" + data)
        write("http", name + "-pieces", b"\x07" + data)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def jwt():
    secret = b"fuzz-secret-0123456789abcdef0123"  # the key in Fuzz/jwt/main.swift
    now = 1_800_000_000
    header = json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode()
    access = json.dumps({"iss": "dataingest", "sub": "u1", "aud": "fuzz-app", "did": "d1", "typ": "access",
                         "iat": now - 10, "exp": now + 1800}).encode()
    custom = json.dumps({"iss": "https://issuer.example", "sub": "user-7", "aud": ["fuzz-app", "other"],
                         "iat": now - 10, "nbf": now - 10, "exp": now + 3600.5}).encode()
    for name, claims in (("access", access), ("custom", custom)):
        signing = b64url(header) + b"." + b64url(claims)
        token = signing + b"." + b64url(hmac.new(secret, signing, hashlib.sha256).digest())
        write("jwt", name + "-token", b"\x00" + token)
        write("jwt", name + "-claims", b"\x01" + header + b"\x00" + claims)
    write("jwt", "login-body", b"\x02" + json.dumps(
        {"username": "a@b.c", "password": "secret-password",
         "options": {"device": {"deviceId": "0123456789abcdef01234567"}}}, separators=(",", ":")).encode())
    # Found by the jwt target: exp = 2^63 - 1 overflowed exp + leeway (FuzzRegressionTests).
    write("jwt", "regression-exp-int64-max", b'\x01{"alg":"HS256"}\x00{"iss":"dataingest","sub":"u","aud":"fuzz-app",'
          b'"did":"d","typ":"access","iat":1,"exp":9223372036854775807}')
    write("jwt", "alg-none", b"\x00" + b64url(b'{"alg":"none"}') + b"." + b64url(access) + b".")


def syslog():
    # First byte: the forwarder's --format (0 plain, 1 json, 2 syslog; the
    # order of LineFormat.allCases in Samples/LogForwarder/LineParser.swift).
    lines = {
        "rfc5424": b'<34>1 2026-11-29T10:00:01.5Z host1 app 42 ID7 [ex@1 k="v"] hello 5424',
        "rfc5424-nil": b"<165>1 - - - - - -",
        "rfc5424-sd-escapes": b'<13>1 2026-11-29T10:00:01+01:00 h a p m [a@1 x="q\\"]" y="\\]"][b@2] msg',
        "rfc5424-bom": b"<14>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 - \xef\xbb\xbfAn application event",
        "rfc5424-no-sd": b"<14>1 2003-10-11T22:14:15.003Z host app 1 - nosd",
        "rfc3164": b"<13>Nov 29 10:00:02 host2 sshd[99]: hello 3164",
        "rfc3164-single-digit-day": b"<38>Oct  9 22:33:20 mymachine su: 'su root' failed for lonvick",
        "rfc3164-no-header": b"<0>message without a timestamp",
        "rfc3164-tag-only": b"<191>kernel: [ 1.234] usb 1-1: new device",
        "priority-bounds": b"<192>1 too large",
        "priority-unclosed": b"<13 no close",
        "empty-priority": b"<>x",
        "plain-in-syslog": b"just a line, no priority",
        # A negative PRI crashed the forwarder (LogForwarderTests.fuzzingFindsAreForwardedNotCrashing).
        "regression-negative-priority": b"<-1>negative priority",
        "regression-negative-priority-5424": b"<-9>1 2026-11-29T10:00:01Z h a p m - negative 5424",
    }
    for name, line in lines.items():
        write("syslog", name, b"\x02" + line)
    write("syslog", "json", b'\x01{"level":"ERROR","msg":"boom","ts":"2026-11-29T10:00:00Z","n":3,"ok":true,"a.b":{"$x":[1,2.5,null]}}')
    write("syslog", "json-millis", b'\x01{"message":"m","time":1764410400123,"severity":"Info"}')
    write("syslog", "json-not-object", b"\x01[1,2,3]")
    write("syslog", "plain", b"\x00plain line with \xff invalid utf-8\r")


bson_and_extjson()
segments()
http()
jwt()
syslog()
