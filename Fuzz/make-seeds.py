#!/usr/bin/env python3
"""Writes the committed seed inputs under Fuzz/corpus/<target>/.

Run from anywhere: python3 Fuzz/make-seeds.py. Deterministic: it rewrites the
same files. BSON and Extended JSON seeds come from the BSON corpus in
../shared/testdata/bson-corpus (if present), the Realm sync seeds
(websocket, syncmessage, changeset) from the recorded traffic in
../shared/testdata/realm-sync (or $REALM_SYNC_TESTDATA_DIR, if present);
the rest are built here by
following Docs/SegmentFormat.md and Docs/Protocol.md. The encrypted segment
seeds need the `cryptography` package (Debian: python3-cryptography) for
AES-256-GCM; without it they are skipped.
"""
import base64, gzip, hashlib, hmac, json, os, struct, sys, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus")
PER_FILE = 4
BSON_CORPUS = os.path.join(ROOT, "..", "shared", "testdata", "bson-corpus")
REALM_SYNC = os.environ.get("REALM_SYNC_TESTDATA_DIR") or os.path.join(ROOT, "..", "shared", "testdata", "realm-sync")


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


# --- Encrypted segment files (Docs/SegmentFormat.md, "Encrypted files") ---
FUZZ_KEY = b"decrypt-fuzz-key-0123456789abcde"  # the key in Fuzz/decrypt/main.swift
ENC_MAGIC = b"DIENC\r\n\x1a"


def encrypted_file(kind, blocks, key=FUZZ_KEY, salt=b"\x5a" * 16, number=7):
    """Header plus one block per (plaintext, final) pair, as the store writes them."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    check = hmac.new(key, b"DataIngest key check v1", hashlib.sha256).digest()[:16]
    head = ENC_MAGIC + struct.pack("<HBB", 1, kind, 1) + bytes(range(16)) + struct.pack("<Q", number) + salt + check
    head += struct.pack("<I", zlib.crc32(head))
    aes = AESGCM(hmac.new(key, b"DataIngest file key v1" + head[:52], hashlib.sha256).digest())
    out = head
    for counter, (plain, final) in enumerate(blocks):
        prefix = struct.pack("<IBQ", len(plain), 1 if final else 0, counter)
        prefix += struct.pack("<I", zlib.crc32(prefix))
        aad = head + struct.pack("<Q", len(out)) + prefix[:13]
        out += prefix + aes.encrypt(b"\x00" * 4 + struct.pack("<Q", counter), plain, aad)
    return out


def deflate():
    # byte 0: piece size - 1 and repeat count (see Fuzz/deflate/main.swift).
    one = segment([[("WeatherSensor", sensor(0))]])
    two = segment([[("WeatherSensor", sensor(i)) for i in range(1, 40)], [("WeatherSensor", sensor(40))]])
    write("deflate", "segment-whole", b"\xff" + two)
    write("deflate", "segment-pieces-of-7", b"\x06" + one)
    write("deflate", "text-repeated", b"\x04" + b"GET /api/items 200 12ms\n" * 40)
    write("deflate", "empty", b"\x00")


def sealed_blocks(data, size):
    """Blocks of `size` bytes, the last (possibly empty) one final, as EncryptedFileWriter writes them."""
    blocks = [(data[i:i + size], False) for i in range(0, len(data) - len(data) % size, size)]
    return blocks + [(data[len(data) - len(data) % size:], True)]


def active_blocks(stream):
    """The first block holds the magic and the header frame, then one block per commit group."""
    blocks, start, at = [], 0, len(MAGIC)
    while at < len(stream):
        kind, length = stream[at], struct.unpack_from("<I", stream, at + 1)[0]
        at += 9 + length
        if kind in (0x48, 0x43):  # the header frame, a commit frame
            blocks.append((stream[start:at], False))
            start = at
    return blocks


def decrypt():
    try:
        import cryptography  # noqa: F401
    except ImportError:
        print("no python cryptography package (python3-cryptography); encrypted segment seeds skipped", file=sys.stderr)
        return
    one = segment([[("WeatherSensor", sensor(1))]])
    two = segment([[("WeatherSensor", sensor(1)), ("WeatherSensor", sensor(2))], [("WeatherSensor", sensor(3))]],
                  schema=client_schema())
    active = segment([[("WeatherSensor", sensor(4))], [("WeatherSensor", sensor(5)), ("WeatherSensor", sensor(6))]],
                     end=False)
    # Byte 0: mode in bits 0-1, block size index in bits 2-4, cut index in bits 5-7 (Fuzz/decrypt/main.swift).
    write("decrypt", "sealed-one", b"\x00" + encrypted_file(2, sealed_blocks(gz(one), 256 << 10)))
    write("decrypt", "sealed-two-small-blocks", b"\x00" + encrypted_file(2, sealed_blocks(gz(two), 64)))
    write("decrypt", "sealed-empty-final", b"\x00" + encrypted_file(2, sealed_blocks(gz(one), len(gz(one)))))
    write("decrypt", "sealed-without-final", b"\x00" + encrypted_file(2, sealed_blocks(gz(one), 100)[:-1]))
    # Found by the decrypt target: reading on after a block failed authentication
    # handed out a negative byte count (DecryptingByteSource; FuzzRegressionTests).
    damaged = bytearray(encrypted_file(2, sealed_blocks(gz(two), 64)))
    damaged[72 + 97 + 17 + 5] ^= 0x01  # the second block's ciphertext
    write("decrypt", "regression-read-after-authentication-failure", b"\x00" + bytes(damaged))
    write("decrypt", "sealed-wrong-key", b"\x00" + encrypted_file(2, sealed_blocks(gz(one), 256 << 10), key=b"k" * 32))
    write("decrypt", "active-two-commits", b"\x01" + encrypted_file(1, active_blocks(active)))
    write("decrypt", "active-torn-tail", b"\x01" + encrypted_file(1, active_blocks(active))[:-20])
    write("decrypt", "active-header-only", b"\x01" + encrypted_file(1, active_blocks(segment([], end=False))))
    write("decrypt", "active-as-sealed", b"\x00" + encrypted_file(1, active_blocks(active)))
    # Bit 2 of byte 0 in modes 0 and 1: the harness recomputes the CRCs, so
    # changed lengths, flags and header fields reach the checks behind them.
    def changed(file, offset, value):
        return file[:offset] + value + file[offset + len(value):]
    sealed = encrypted_file(2, sealed_blocks(gz(two), 64))
    stream = encrypted_file(1, active_blocks(active))
    write("decrypt", "crc-fixed-sealed-huge-block", b"\x04" + changed(sealed, 72, struct.pack("<I", 0x7FFFFFF0)))
    write("decrypt", "crc-fixed-sealed-final-first", b"\x04" + changed(sealed, 72 + 4, b"\x01"))
    write("decrypt", "crc-fixed-active-longer-block", b"\x05" + changed(stream, 72, struct.pack("<I", 600)))
    write("decrypt", "crc-fixed-active-final-flag", b"\x05" + changed(stream, 72 + 4, b"\x01"))
    write("decrypt", "crc-fixed-header-version-2", b"\x05" + changed(stream, 8, b"\x02"))
    write("decrypt", "crc-fixed-header-kind-sealed", b"\x05" + changed(stream, 10, b"\x02"))
    # Plaintext, encrypted by the harness: block size 33 (index 3) or 7 (index 1), cut 0 or 17 (index 3).
    write("decrypt", "plain-active", bytes([2 | 3 << 2]) + active)
    write("decrypt", "plain-active-torn", bytes([2 | 1 << 2 | 3 << 5]) + active)
    write("decrypt", "plain-sealed-two", bytes([3 | 3 << 2]) + two)
    write("decrypt", "plain-sealed-torn", bytes([3 | 1 << 2 | 3 << 5]) + one)


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
    # First byte: the forwarder's --format (0 plain, 1 json, 2 syslog, 3
    # docker, 4 cri; the order of LineFormat.allCases in
    # Samples/LogForwarder/LineParser.swift).
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
    write("syslog", "docker", b'\x03{"log":"hello\\n","stream":"stderr","time":"2024-05-01T10:00:00.123456789Z"}')
    write("syslog", "docker-partial", b'\x03{"log":"part","stream":"stdout","time":"2024-05-01T10:00:00+02:00"}')
    write("syslog", "cri", b"\x042024-05-01T10:00:00.987654321Z stdout F message")
    write("syslog", "cri-partial", b"\x042024-05-01T10:00:00Z stderr P:x part")
    write("syslog", "cri-empty", b"\x042024-05-01T10:00:00.1Z stdout F")


# --- Realm sync (Sources/RealmSync; the recorded traffic of realm-core 14.14.0) ---
def ws_frame(opcode, payload, final=True, mask=b"\x37\xfa\x21\x3d"):
    """A client WebSocket frame (RFC 6455), masked."""
    head = bytes([(0x80 if final else 0) | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([0x80 | n])
    elif n <= 0xFFFF:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def recorded_messages():
    """(scenario, direction, message bytes) of every recorded WebSocket message."""
    files = [("basic", "transcript.jsonl"), ("batch", "transcript.jsonl"),
             ("reconnect", "transcript-1-noack.jsonl"), ("reconnect", "transcript-2-full.jsonl")]
    for scenario, name in files:
        with open(os.path.join(REALM_SYNC, scenario, name)) as f:
            for line in f:
                event = json.loads(line)
                if event.get("kind") == "message":
                    yield scenario, event["dir"], event["head"].encode() + b"\n" + base64.b64decode(event["body_b64"])


def upload_changesets(message):
    """The changesets of an upload message's body."""
    head, body = message.split(b"\n", 1)
    fields = head.split(b" ")
    if fields[2] == b"1":
        body = zlib.decompress(body)
    out, at = [], 0
    while at < len(body):
        numbers = []
        for _ in range(5):
            end = body.index(b" ", at)
            numbers.append(int(body[at:end]))
            at = end + 1
        out.append(body[at:at + numbers[4]])
        at += numbers[4]
    return out


def realm_sync():
    if not os.path.isdir(REALM_SYNC):
        print("no Realm sync recordings at %s; websocket, syncmessage and changeset seeds skipped" % REALM_SYNC, file=sys.stderr)
        return
    seen = set()
    session = b""
    changesets = []
    for index, (scenario, direction, message) in enumerate(recorded_messages()):
        if message in seen:
            continue
        seen.add(message)
        kind = message.split(b" ", 1)[0].decode()
        # syncmessage: byte 0 even = a client message, odd = a server message.
        if len(message) < 60000:
            write("syncmessage", "%s-%02d-%s-%s" % (scenario, index, direction, kind),
                  (b"\x00" if direction == "c2s" else b"\x01") + message)
        if direction == "c2s":
            if scenario == "basic":
                session += ws_frame(2, message)
            if kind == "upload":
                changesets += [(scenario, data) for data in upload_changesets(message)]
    write("syncmessage", "query", b"\x00query 1 1 2\n{}")
    write("syncmessage", "ping", b"\x00ping 1234 5\n")
    write("syncmessage", "json-error-client", b'\x00json_error 212 104 1\n{"message":"m","isRecoveryModeDisabled":false,'
          b'"tryAgain":true,"logURL":"","shouldClientReset":false,"action":"Warning"}')
    write("syncmessage", "log-message", b'\x01log_message 1 30\n{"level":"info","msg":"hello"}')
    write("syncmessage", "error", b"\x01error 103 3 0 1\nbad")
    # websocket: byte 0 = piece size (bits 0-5), small limit (bit 6), server frames (bit 7).
    write("websocket", "basic-session-whole", b"\x00" + session)
    write("websocket", "basic-session-pieces", b"\x07" + session[:4000])
    write("websocket", "basic-session-small-limit", b"\x40" + session[:4000])
    fragmented = ws_frame(1, b"Hel", final=False) + ws_frame(9, b"ping") + ws_frame(0, "lo, wörld".encode(), final=True)
    fragmented += ws_frame(2, b"\x01" * 200, final=False) + ws_frame(0, b"\x02" * 200) + ws_frame(8, b"\x03\xe8bye")
    write("websocket", "fragments-and-controls", b"\x00" + fragmented)
    write("websocket", "fragments-one-byte", b"\x01" + fragmented)
    write("websocket", "server-frames", b"\x80" + b"\x82\x09mark 1 1\n" + b"\x89\x00" + b"\x88\x02\x03\xe8")
    write("websocket", "length-64", b"\x00" + ws_frame(2, b"\x00" * 70000)[:200])
    # changeset: byte 0 = schema mode (0 fixed, the recorded schema; 1 development).
    for number, (scenario, data) in enumerate(changesets):
        if len(data) > 60000:
            continue
        write("changeset", "%s-%02d-fixed" % (scenario, number), b"\x00" + data)
        write("changeset", "%s-%02d-development" % (scenario, number), b"\x01" + data)


bson_and_extjson()
segments()
deflate()
decrypt()
http()
jwt()
syslog()
realm_sync()
