"""The gateway under load and abuse: hundreds of connections, clients that vanish mid-call,
garbage and oversized frames, abandoned scanners. Afterwards the server must be healthy and
every acknowledged write exact."""

import random
import socket
import struct
import threading
import time

import happybase
import pytest

from basalt_server import BasaltServer, wait_until

SETTINGS = [("buffered", "binary"), ("framed", "binary"), ("buffered", "compact"),
            ("framed", "compact")]


@pytest.fixture(scope="module")
def server():
    with BasaltServer(["--scanner-timeout-ms", "4000"]) as s:
        yield s


def connect(server, transport="buffered", protocol="binary"):
    return happybase.Connection(host=server.host, port=server.port, transport=transport,
                                protocol=protocol)


def raw(server):
    s = socket.create_connection((server.host, server.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def closed_by_server(s):
    """Whether the server closed `s`: end-of-stream or a reset, after at most the exception
    it may answer a request it could not decode with."""
    s.settimeout(10)
    try:
        for _ in range(100):
            if s.recv(4096) == b"":
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False
    return False


def framed_call(method, **args):
    """A whole framed binary request for `method`, as bytes."""
    from thriftpy2.protocol import TBinaryProtocol
    from thriftpy2.thrift import TMessageType
    from thriftpy2.transport import TMemoryBuffer

    import Hbase_thrift as H

    buf = TMemoryBuffer()
    proto = TBinaryProtocol(buf)
    proto.write_message_begin(method, TMessageType.CALL, 1)
    getattr(H.Hbase, method + "_args")(**args).write(proto)
    proto.write_message_end()
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def abrupt_call(server, row, whole):
    """Sends a mutateRow and disconnects without reading the answer: the whole request (it
    may or may not be applied) or only its first half (it must not be)."""
    import Hbase_thrift as H

    req = framed_call("mutateRow", tableName=b"load", row=row,
                      mutations=[H.Mutation(column=b"cf:v", value=row)], attributes={})
    s = raw(server)
    s.sendall(req if whole else req[: len(req) // 2])
    s.close()


def test_hundreds_of_clients_random_disconnects_and_exact_data(server):
    admin = connect(server)
    admin.create_table("load", {"cf": {}})
    idle = [connect(server, *SETTINGS[i % 4]) for i in range(200)]
    for c in idle[::20]:
        c.tables()  # idle connections stay usable; most never send a byte
    wait_until(lambda: server.metric("basalt_thrift_connections") >= 201, what="201 connections")

    errors = []
    counts = {}

    def worker(n):
        rng = random.Random(n)
        transport, protocol = SETTINGS[n % 4]
        conn = connect(server, transport, protocol)
        t = conn.table("load")
        done = 0
        try:
            while done < 150:
                op = rng.random()
                if op < 0.1:
                    conn.close()  # a client that disconnects between calls
                    conn = connect(server, transport, protocol)
                    t = conn.table("load")
                    continue
                if op < 0.15:
                    abrupt_call(server, b"abrupt-%d" % n, whole=True)
                    abrupt_call(server, b"half-%d" % n, whole=False)
                    continue
                t.counter_inc(b"ctr-%d" % n, b"cf:n")
                t.put(b"w-%d-%d" % (n, done), {b"cf:v": b"%d" % done})
                done += 1
            counts[n] = done
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"worker {n}: {e!r}")
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(32)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    t = admin.table("load")
    for n in range(32):
        assert counts[n] == 150
        assert t.counter_get(b"ctr-%d" % n, b"cf:n") == 150
        rows = dict(t.scan(row_prefix=b"w-%d-" % n))
        assert len(rows) == 150
        assert all(v[b"cf:v"] == k.rsplit(b"-", 1)[1] for k, v in rows.items())
    # Requests whose client left mid-call: whole ones may have been applied, halves never.
    assert all(d == {b"cf:v": k} for k, d in t.scan(row_prefix=b"abrupt-"))
    assert list(t.scan(row_prefix=b"half-")) == []
    # Idle connections are still open and answer, whether they spoke before or not.
    assert all(b"load" in c.tables() for c in idle[:25])
    for c in idle:
        c.close()
    wait_until(lambda: server.metric("basalt_thrift_connections") <= 1,
               what="closed connections to be released")
    assert server.alive()


def test_malformed_and_oversized_requests_close_only_their_connection(server):
    good = connect(server, "framed", "compact")
    good.create_table("abuse", {"cf": {}})
    good.table("abuse").put(b"r", {b"cf:v": b"kept"})
    cases = {
        "oversized frame": struct.pack(">i", 1 << 30) + b"\x80\x01",
        "negative frame": struct.pack(">i", -5) + b"\x80",
        "bad binary version": b"\x80\x07\x00\x01" + b"\x00" * 16,
        "negative string length": b"\x80\x01\x00\x01" + struct.pack(">i", -1),
        "huge list": (b"\x80\x01\x00\x01" + struct.pack(">i", 7) + b"getRows" + b"\x00" * 4
                      + b"\x0f\x00\x02" + b"\x0b" + struct.pack(">i", 1 << 30)),
        "garbage": bytes(random.Random(3).randrange(256) for _ in range(64)),
    }
    for name, payload in cases.items():
        s = raw(server)
        s.sendall(payload)
        assert closed_by_server(s), name
        s.close()
    # A request cut off mid-message, then silence: the server waits, the client leaves.
    s = raw(server)
    s.sendall(b"\x80\x01\x00\x01\x00\x00\x00\x06getRow")
    s.close()
    assert good.table("abuse").row(b"r") == {b"cf:v": b"kept"}
    assert server.alive()
    log = server.log()
    assert "closing a Thrift connection" in log
    assert "a frame of 1073741824 bytes" in log


def test_abandoned_scanners_expire_and_free_their_leases(server):
    c = connect(server)
    c.create_table("leases", {"cf": {}})
    t = c.table("leases")
    with t.batch() as b:
        for i in range(50):
            b.put(b"r%02d" % i, {b"cf:v": b"x"})
    before = server.metric("basalt_thrift_open_scanners")
    ids = [c.client.scannerOpen(b"leases", b"", [], {}) for _ in range(10)]
    assert server.metric("basalt_thrift_open_scanners") == before + 10
    assert len(c.client.scannerGetList(ids[0], 5)) == 5
    time.sleep(0.5)
    assert len(c.client.scannerGetList(ids[0], 5)) == 5, "a fetch renews the lease"
    wait_until(lambda: server.metric("basalt_thrift_open_scanners") == before, timeout=60,
               what="the scanners' leases to expire")
    with pytest.raises(Exception) as e:
        c.client.scannerGet(ids[0])
    assert "scanner ID is invalid" in str(e.value)
    c.close()


def test_acknowledged_writes_survive_kill_9():
    """Writes through the gateway are acknowledged after the WAL is synced: a kill -9 right
    after loses none of them."""
    first = BasaltServer()
    c = connect(first, "framed", "compact")
    c.create_table("durable", {"cf": {}})
    t = c.table("durable")
    for i in range(200):
        t.put(b"r%03d" % i, {b"cf:v": b"%d" % i})
    with t.batch(batch_size=50) as b:
        for i in range(200, 400):
            b.put(b"r%03d" % i, {b"cf:v": b"%d" % i})
    t.counter_inc(b"ctr", b"cf:n", 41)
    workdir = first.kill9()
    c.close()
    with BasaltServer(workdir=workdir) as second:
        t = connect(second).table("durable")
        rows = dict(t.scan(row_prefix=b"r"))
        assert len(rows) == 400
        assert all(d[b"cf:v"] == b"%d" % int(k[1:]) for k, d in rows.items())
        assert t.counter_get(b"ctr", b"cf:n") == 41
