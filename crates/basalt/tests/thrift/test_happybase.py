"""Every public happybase 1.3.0 API against a real `basalt server`, with every transport and
protocol (the `settings` fixture), plus the Thrift methods happybase does not wrap, called
through its Thrift client. Expected values are HBase's."""

import struct
import threading

import os

import happybase
import pytest
import thriftpy2
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException

import Hbase_thrift as H  # registered by happybase


def msg(e):
    """An exception's message (happybase leaves Thrift strings as bytes)."""
    m = e.value.message
    return m.decode() if isinstance(m, bytes) else m


# --- Connection -------------------------------------------------------------------------


def test_connection_lifecycle_and_table_admin(settings):
    c = happybase.Connection(autoconnect=False, table_prefix="app", **settings)
    assert not c.transport.is_open()
    c.open()
    assert c.transport.is_open()
    c.create_table("users", {"info": {"max_versions": 5, "compression": "GZ",
                                      "in_memory": True, "bloom_filter_type": "ROWCOL",
                                      "block_cache_enabled": True, "time_to_live": 3600},
                             "extra": {}})
    assert b"users" in c.tables(), "tables() strips the prefix"
    assert c.table("users").name == b"app_users"
    assert c.table("raw", use_prefix=False).name == b"raw"
    fams = c.table("users").families()
    assert set(fams) == {b"info", b"extra"}
    info = fams[b"info"]
    assert (info["max_versions"], info["compression"], info["in_memory"]) == (5, b"GZ", True)
    assert (info["bloom_filter_type"], info["block_cache_enabled"], info["time_to_live"]) == (
        b"ROWCOL", True, 3600)
    extra = fams[b"extra"]
    # The IDL's defaults: 3 versions, no block cache, forever.
    assert (extra["max_versions"], extra["block_cache_enabled"], extra["time_to_live"]) == (
        3, False, 2147483647)
    assert c.is_table_enabled("users")
    c.disable_table("users")
    assert not c.is_table_enabled("users")
    c.enable_table("users")
    c.compact_table("users")
    c.compact_table("users", major=True)
    with pytest.raises(H.AlreadyExists) as e:
        c.create_table("users", {"info": {}})
    assert msg(e) == "table name already in use"
    with pytest.raises(H.IOError) as e:
        c.delete_table("users")  # still enabled
    assert "TableNotDisabledException" in msg(e)
    c.delete_table("users", disable=True)
    assert b"users" not in c.tables()
    with pytest.raises(H.IOError) as e:
        c.delete_table("users", disable=False)
    assert msg(e) == "java.io.IOException: table does not exist"
    c.close()
    assert not c.transport.is_open()
    # Another separator, and a socket timeout (ms).
    c = happybase.Connection(table_prefix="pre", table_prefix_separator=b"-", timeout=5000,
                             **settings)
    c.create_table("x", {"cf": {}})
    assert c.table("x").name == b"pre-x" and b"x" in c.tables()
    raw = happybase.Connection(**settings)
    assert b"pre-x" in raw.tables()
    c.delete_table("x", disable=True)
    raw.close()
    c.close()


def test_bad_family_descriptors_are_illegal_arguments(conn):
    with pytest.raises(H.IllegalArgument) as e:
        conn.create_table("bad1", {"cf": {"compression": "LZMA"}})
    assert "Unsupported compression algorithm name: lzma" in msg(e)
    with pytest.raises(H.IllegalArgument) as e:
        conn.create_table("bad2", {"cf": {"bloom_filter_type": "nope"}})
    assert "BloomType.nope" in msg(e)
    assert b"bad1" not in conn.tables() and b"bad2" not in conn.tables()


def test_requests_are_counted_in_metrics(server, table):
    table.row(b"r")
    name = 'basalt_requests_total{api="thrift",op="getRowWithColumns"}'
    assert server.metric(name) >= 1
    assert server.metric("basalt_thrift_connections") >= 1


def test_errors_name_hbase_exceptions(conn):
    missing = conn.table("no_such_table")
    with pytest.raises(H.IOError) as e:
        missing.row(b"r")
    assert msg(e).startswith("org.apache.hadoop.hbase.TableNotFoundException")
    assert missing.regions() == [], "an unknown table has no regions"
    with pytest.raises(H.IOError) as e:
        conn.is_table_enabled("no_such_table")
    assert "TableNotFoundException" in msg(e)


# --- Table: writes and reads ----------------------------------------------------------------


def test_put_row_rows_and_timestamps(table):
    table.put(b"r1", {b"cf1:a": b"old"}, timestamp=1000)
    table.put(b"r1", {b"cf1:a": b"new", b"cf2:b": b"x"}, timestamp=2000)
    table.put(b"r1", {b"cf3:c": b"now"})
    assert table.row(b"r1") == {b"cf1:a": b"new", b"cf2:b": b"x", b"cf3:c": b"now"}
    assert table.row(b"r1", columns=[b"cf1"]) == {b"cf1:a": b"new"}
    assert table.row(b"r1", columns=[b"cf1:a", b"cf3:c"]) == {b"cf1:a": b"new", b"cf3:c": b"now"}
    # A timestamp is an exclusive upper bound: 2000 does not see the version at 2000.
    assert table.row(b"r1", timestamp=2000) == {b"cf1:a": b"old"}
    assert table.row(b"r1", timestamp=2001) == {b"cf1:a": b"new", b"cf2:b": b"x"}
    assert table.row(b"r1", timestamp=1000) == {}
    with_ts = table.row(b"r1", columns=[b"cf1:a"], include_timestamp=True)
    assert with_ts == {b"cf1:a": (b"new", 2000)}
    assert table.row(b"missing") == {}
    table.put(b"r2", {b"cf1:a": b"two"})
    rows = table.rows([b"r1", b"missing", b"r2"])
    assert [k for k, _ in rows] == [b"r1", b"r2"], "rows without cells are left out"
    assert table.rows([b"r1", b"r2"], columns=[b"cf1:a"], timestamp=2001) == [
        (b"r1", {b"cf1:a": b"new"})]
    assert table.rows([b"r2"], include_timestamp=True)[0][1][b"cf1:a"][0] == b"two"
    assert table.rows([]) == {}


def test_cells_versions(table):
    for ts, v in [(10, b"a"), (20, b"b"), (30, b"c"), (40, b"d")]:
        table.put(b"r", {b"cf1:q": v}, timestamp=ts)
    assert table.cells(b"r", b"cf1:q") == [b"d", b"c", b"b"], "VERSIONS => 3"
    assert table.cells(b"r", b"cf1:q", versions=2) == [b"d", b"c"]
    assert table.cells(b"r", b"cf1:q", timestamp=30, include_timestamp=True) == [
        (b"b", 20), (b"a", 10)]
    assert table.cells(b"r", b"cf1:nope") == []
    with pytest.raises(ValueError):
        table.cells(b"r", b"cf1:q", versions=0)


def test_delete_variants(table):
    table.put(b"r", {b"cf1:a": b"v1"}, timestamp=100)
    table.put(b"r", {b"cf1:a": b"v2", b"cf1:b": b"b", b"cf2:c": b"c"}, timestamp=200)
    # A timestamp deletes every version at or before it.
    table.delete(b"r", columns=[b"cf1:a"], timestamp=150)
    assert table.cells(b"r", b"cf1:a", include_timestamp=True) == [(b"v2", 200)]
    table.delete(b"r", columns=[b"cf1:a"])
    assert b"cf1:a" not in table.row(b"r")
    table.delete(b"r", columns=[b"cf2"])  # a whole family
    assert table.row(b"r") == {b"cf1:b": b"b"}
    table.put(b"r", {b"cf2:c": b"back"})
    table.delete(b"r", timestamp=150)  # the whole row at or before 150
    assert table.row(b"r") == {b"cf1:b": b"b", b"cf2:c": b"back"}
    table.delete(b"r", wal=False)
    assert table.row(b"r") == {}
    # A put right after a delete is not masked by it.
    table.put(b"r", {b"cf1:a": b"again"})
    assert table.row(b"r") == {b"cf1:a": b"again"}


def test_empty_qualifier_and_binary_keys(table):
    key = bytes(range(256))
    table.put(key, {b"cf1:": b"empty qualifier", b"cf1:\x00\xff": b"\x00binary\xff"})
    assert table.row(key) == {b"cf1:": b"empty qualifier", b"cf1:\x00\xff": b"\x00binary\xff"}
    big = b"x" * (3 << 20)
    table.put(b"big", {b"cf1:v": big})
    assert table.row(b"big")[b"cf1:v"] == big


# --- Counters -------------------------------------------------------------------------------


def test_counters(table):
    assert table.counter_get(b"c", b"cf1:n") == 0
    assert table.counter_inc(b"c", b"cf1:n") == 1
    assert table.counter_inc(b"c", b"cf1:n", 41) == 42
    assert table.counter_dec(b"c", b"cf1:n", 2) == 40
    assert table.counter_dec(b"c", b"cf1:n") == 39
    table.counter_set(b"c", b"cf1:n", 7)
    assert table.counter_get(b"c", b"cf1:n") == 7
    assert table.row(b"c")[b"cf1:n"] == struct.pack(">q", 7)
    table.put(b"c", {b"cf1:s": b"not a long"})
    with pytest.raises(H.IOError) as e:
        table.counter_inc(b"c", b"cf1:s")
    assert "DoNotRetryIOException" in msg(e)


def test_concurrent_counter_increments_are_exact(settings, table):
    def work():
        c = happybase.Connection(**settings)
        t = c.table(table.name)
        for _ in range(100):
            t.counter_inc(b"shared", b"cf1:n")
        c.close()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert table.counter_get(b"shared", b"cf1:n") == 800


# --- Batches --------------------------------------------------------------------------------


def test_batches(table):
    with table.batch(batch_size=7) as b:
        for i in range(50):
            b.put(b"b%03d" % i, {b"cf1:v": b"%d" % i})
    assert len(list(table.scan(row_prefix=b"b"))) == 50
    b = table.batch(timestamp=5000, wal=False)
    b.put(b"b000", {b"cf1:v": b"ts"})
    b.delete(b"b001")
    b.delete(b"b002", columns=[b"cf1:v"])
    b.send()
    assert table.cells(b"b000", b"cf1:v", include_timestamp=True)[-1] == (b"ts", 5000)
    # Deletes at 5000 cover versions at or before 5000 only, not the puts at server time.
    assert table.row(b"b001") == {b"cf1:v": b"1"}
    assert table.row(b"b002") == {b"cf1:v": b"2"}
    b = table.batch()
    b.delete(b"b001")
    b.delete(b"b002", columns=[b"cf1:v"])
    b.send()
    assert table.rows([b"b001", b"b002"]) == []
    with pytest.raises(ValueError):
        table.batch(batch_size=0)
    with pytest.raises(TypeError):
        table.batch(transaction=True, batch_size=10)


def test_batch_transactions(table):
    with pytest.raises(RuntimeError):
        with table.batch(transaction=True) as b:
            b.put(b"tx", {b"cf1:v": b"lost"})
            raise RuntimeError("abort")
    assert table.row(b"tx") == {}, "a transaction that raised sends nothing"
    with pytest.raises(RuntimeError):
        with table.batch(transaction=False) as b:
            b.put(b"tx", {b"cf1:v": b"kept"})
            raise RuntimeError("no transaction")
    assert table.row(b"tx") == {b"cf1:v": b"kept"}


# --- Scans ----------------------------------------------------------------------------------


@pytest.fixture
def filled(table):
    with table.batch() as b:
        for i in range(300):
            b.put(b"row-%03d" % i, {b"cf1:a": b"%d" % i, b"cf1:b": b"b", b"cf2:c": b"c"})
    return table


def test_scan_ranges_prefixes_limits_and_batches(filled):
    t = filled
    assert len(list(t.scan())) == 300
    keys = [k for k, _ in t.scan(row_start=b"row-010", row_stop=b"row-020")]
    assert keys == [b"row-%03d" % i for i in range(10, 20)]
    assert len(list(t.scan(row_prefix=b"row-1"))) == 100
    assert len(list(t.scan(limit=17, batch_size=5))) == 17
    assert len(list(t.scan(batch_size=1, limit=3))) == 3
    assert list(t.scan(row_start=b"zzz")) == []
    # scan_batching splits each row into results of at most 2 cells.
    parts = list(t.scan(row_start=b"row-000", row_stop=b"row-001", scan_batching=2))
    assert [len(d) for _, d in parts] == [2, 1]
    assert all(k == b"row-000" for k, _ in parts)


def test_scan_columns_timestamps_and_sorting(filled):
    t = filled
    row = dict(t.scan(row_prefix=b"row-005", columns=[b"cf1:a", b"cf2"]))[b"row-005"]
    assert row == {b"cf1:a": b"5", b"cf2:c": b"c"}
    t.put(b"row-005", {b"cf1:a": b"old"}, timestamp=10)
    assert dict(t.scan(row_prefix=b"row-005", timestamp=11)) == {b"row-005": {b"cf1:a": b"old"}}
    assert list(t.scan(timestamp=10)) == [], "a timestamp is an exclusive upper bound"
    k, d = next(t.scan(row_prefix=b"row-006", include_timestamp=True))
    assert d[b"cf1:a"][0] == b"6" and isinstance(d[b"cf1:a"][1], int)
    wide = {b"cf1:col-%03d" % i: b"" for i in range(50)}
    t.put(b"wide", wide)
    k, d = next(t.scan(row_start=b"wide", sorted_columns=True))
    assert list(d.items()) == sorted(wide.items())


def test_scan_reverse_and_filters(filled):
    t = filled
    keys = [k for k, _ in t.scan(reverse=True, limit=3)]
    assert keys == [b"row-299", b"row-298", b"row-297"]
    keys = [k for k, _ in t.scan(row_start=b"row-010", row_stop=b"row-005", reverse=True)]
    assert keys == [b"row-%03d" % i for i in range(10, 5, -1)]
    f = b"SingleColumnValueFilter('cf1', 'a', =, 'binary:42')"
    assert [k for k, _ in t.scan(filter=f)] == [b"row-042"]
    f = b"PrefixFilter('row-2') AND ColumnPrefixFilter('a') AND PageFilter(5)"
    rows = list(t.scan(filter=f))
    assert [k for k, _ in rows] == [b"row-%03d" % i for i in range(200, 205)]
    assert all(set(d) == {b"cf1:a"} for _, d in rows)
    f = b"KeyOnlyFilter() AND FirstKeyOnlyFilter()"
    assert next(t.scan(filter=f))[1] == {b"cf1:a": b""}
    with pytest.raises(H.IOError) as e:
        list(t.scan(filter=b"NoSuchFilter('x')"))
    assert "IllegalArgumentException" in msg(e)


def test_scanner_close_and_leases(conn, filled):
    s = filled.scan(batch_size=10)
    next(s)
    s.close()
    sid = conn.client.scannerOpenWithScan(filled.name, H.TScan(startRow=b"row-1"), {})
    assert conn.client.scannerGet(sid)[0].row == b"row-100"
    assert [r.row for r in conn.client.scannerGetList(sid, 2)] == [b"row-101", b"row-102"]
    conn.client.scannerClose(sid)
    with pytest.raises(H.IllegalArgument) as e:
        conn.client.scannerGet(sid)
    assert msg(e) == "scanner ID is invalid"
    with pytest.raises(H.IllegalArgument):
        conn.client.scannerClose(sid)


# --- Pools ----------------------------------------------------------------------------------


def test_connection_pool(settings, table):
    pool = happybase.ConnectionPool(size=3, **settings)
    seen = []

    def work(i):
        for j in range(20):
            with pool.connection() as c:
                t = c.table(table.name)
                t.put(b"p%d-%d" % (i, j), {b"cf1:v": b"x"})
                seen.append(c)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in seen}) <= 3
    assert len(list(table.scan(row_prefix=b"p"))) == 120


def test_pool_exhaustion_and_a_broken_connection(settings, table):
    pool = happybase.ConnectionPool(size=1, **settings)
    refused = []

    def other_thread():
        try:
            with pool.connection(timeout=0.05):
                pass
        except happybase.NoConnectionsAvailable:
            refused.append(True)

    with pool.connection() as held:
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert refused == [True]
        assert held.table(table.name).row(b"none") == {}
    # A connection whose socket broke is replaced by a fresh one.
    with pytest.raises(Exception):
        with pool.connection() as c:
            c.transport.close()
            c.tables()
    with pool.connection() as c:
        assert table.name in c.tables()


# --- Thrift methods happybase does not wrap --------------------------------------------------


def test_raw_gets_and_mutations(conn, table):
    cl, name = conn.client, table.name
    for ts in (10, 20, 30):
        cl.mutateRowTs(name, b"r", [H.Mutation(column=b"cf1:q", value=b"v%d" % ts)], ts, {})
    assert [c.value for c in cl.get(name, b"r", b"cf1:q", {})] == [b"v30"]
    assert [c.timestamp for c in cl.getVer(name, b"r", b"cf1:q", 2, {})] == [30, 20]
    assert [c.timestamp for c in cl.getVerTs(name, b"r", b"cf1:q", 30, 5, {})] == [20, 10]
    assert [r.row for r in cl.getRowTs(name, b"r", 15, {})] == [b"r"]
    assert cl.getRowsTs(name, [b"r"], 10, {}) == []
    with pytest.raises(H.IOError) as e:
        cl.getVer(name, b"r", b"cf1:q", 0, {})
    assert "versions must be positive" in msg(e)
    # mutateRow: its deletes apply before its puts.
    cl.mutateRow(name, b"r", [H.Mutation(isDelete=True, column=b"cf1"),
                              H.Mutation(column=b"cf1:q", value=b"fresh")], {})
    assert [c.value for c in cl.getVer(name, b"r", b"cf1:q", 5, {})] == [b"fresh"]
    # A put that would be refused refuses the whole call: its delete is not applied either.
    with pytest.raises(H.IOError) as e:
        cl.mutateRow(name, b"r", [H.Mutation(isDelete=True, column=b"cf1:q"),
                                  H.Mutation(column=b"nope:q", value=b"x")], {})
    assert "NoSuchColumnFamilyException" in msg(e)
    assert [c.value for c in cl.get(name, b"r", b"cf1:q", {})] == [b"fresh"]
    cl.deleteAllTs(name, b"r", b"cf1:q", 2 ** 62, {})
    assert cl.getRow(name, b"r", {}) == []
    cl.mutateRows(name, [H.BatchMutation(row=b"m%d" % i, mutations=[
        H.Mutation(column=b"cf2:x", value=b"%d" % i)]) for i in range(5)], {})
    assert len(cl.getRows(name, [b"m%d" % i for i in range(5)], {})) == 5
    cl.deleteAllRowTs(name, b"m0", 2 ** 62, {})
    cl.deleteAllRow(name, b"m1", {})
    cl.deleteAll(name, b"m2", b"cf2", {})
    assert [r.row for r in cl.getRows(name, [b"m%d" % i for i in range(5)], {})] == [b"m3", b"m4"]
    with pytest.raises(H.IllegalArgument) as e:
        cl.mutateRows(name, [H.BatchMutation(row=b"m9", mutations=[
            H.Mutation(column=b"cf2", value=b"no qualifier")])], {})
    assert msg(e) == "Invalid famAndQf provided."
    with pytest.raises(H.IllegalArgument) as e:  # a row of no bytes refuses the whole batch
        cl.mutateRows(name, [H.BatchMutation(row=b"m8", mutations=[
            H.Mutation(column=b"cf2:x", value=b"y")]), H.BatchMutation(row=b"", mutations=[
                H.Mutation(column=b"cf2:x", value=b"y")])], {})
    assert msg(e) == "Row length is 0"
    assert cl.getRow(name, b"m8", {}) == []


def test_raw_check_and_put_append_and_increments(conn, table):
    cl, name = conn.client, table.name
    put = H.Mutation(column=b"cf1:q", value=b"first")
    assert cl.checkAndPut(name, b"r", b"cf1:q", None, put, {}), "absent value: if not exists"
    assert not cl.checkAndPut(name, b"r", b"cf1:q", None, put, {})
    put2 = H.Mutation(column=b"cf1:q", value=b"second")
    assert not cl.checkAndPut(name, b"r", b"cf1:q", b"nope", put2, {})
    assert cl.checkAndPut(name, b"r", b"cf1:q", b"first", put2, {})
    cells = cl.append(H.TAppend(table=name, row=b"r", columns=[b"cf1:q", b"cf1:z"],
                                values=[b"+x", b"new"]))
    assert [c.value for c in cells] == [b"second+x", b"new"]
    cl.increment(H.TIncrement(table=name, row=b"n", column=b"cf1:c", ammount=5))
    cl.incrementRows([H.TIncrement(table=name, row=b"n", column=b"cf1:c", ammount=2),
                      H.TIncrement(table=name, row=b"n2", column=b"cf1:c", ammount=-1)])
    assert cl.atomicIncrement(name, b"n", b"cf1:c", 0) == 7
    assert cl.atomicIncrement(name, b"n2", b"cf1:c", 0) == -1
    with pytest.raises(TApplicationException) as e:
        cl.increment(H.TIncrement(table=name, row=b"", column=b"cf1:c", ammount=1))
    assert "Must supply a table and a row key" in msg(e)


def test_raw_scanners_and_server_facts(conn, table):
    cl, name = conn.client, table.name
    for k in (b"a1", b"a2", b"b1", b"b2"):
        cl.mutateRow(name, k, [H.Mutation(column=b"cf1:q", value=k)], {})
    cl.mutateRowTs(name, b"a3", [H.Mutation(column=b"cf1:q", value=b"old")], 5, {})

    def rows(sid):
        out = [r.row for r in cl.scannerGetList(sid, 100)]
        cl.scannerClose(sid)
        return out

    assert rows(cl.scannerOpen(name, b"a2", [b"cf1"], {})) == [b"a2", b"a3", b"b1", b"b2"]
    assert rows(cl.scannerOpenWithStop(name, b"a1", b"b1", [], {})) == [b"a1", b"a2", b"a3"]
    assert rows(cl.scannerOpenWithPrefix(name, b"a", None, {})) == [b"a1", b"a2", b"a3"]
    assert rows(cl.scannerOpenTs(name, b"", [], 6, {})) == [b"a3"]
    assert rows(cl.scannerOpenWithStopTs(name, b"a", b"b", [], 5, {})) == []
    regions = cl.getTableRegions(name)
    assert len(regions) == 1 and regions[0].startKey == b"" and regions[0].port > 0
    info = cl.getRegionInfo(name + b",a2,99999999999999")
    assert info.name == regions[0].name and info.id == regions[0].id


EXTRAS = thriftpy2.load(os.path.join(os.path.dirname(__file__), "hbase_extras.thrift"),
                        module_name="hbase_extras_thrift")


def test_methods_newer_than_happybases_idl(server, settings, table):
    """The five methods HBase 2's IDL has and happybase's lacks."""
    from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
    from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory

    proto = {"binary": TBinaryProtocolFactory, "compact": TCompactProtocolFactory}
    trans = {"buffered": TBufferedTransportFactory, "framed": TFramedTransportFactory}
    cl = make_client(EXTRAS.Hbase, server.host, server.port,
                     proto_factory=proto[settings["protocol"]](),
                     trans_factory=trans[settings["transport"]]())
    try:
        assert cl.getTableNamesWithIsTableEnabled()[table.name] is True
        assert cl.getThriftServerType() == EXTRAS.TThriftServerType.ONE
        cid = cl.getClusterId()
        assert len(cid) == 36 and cid == cl.getClusterId()
        entity = EXTRAS.TAccessControlEntity(username="u", scope=EXTRAS.TPermissionScope.TABLE,
                                             actions="R", tableName=b"t")
        for call in (cl.grant, cl.revoke):
            with pytest.raises(EXTRAS.IOError) as e:
                call(entity)
            assert "AccessController is not loaded" in msg(e)
        # An unknown method is refused, and the connection still serves the next request.
        with pytest.raises(TApplicationException) as e:
            cl.noSuchMethod("x" * 100, ["a", "b"])
        assert "unknown method noSuchMethod" in str(e.value)
        assert cl.getThriftServerType() == EXTRAS.TThriftServerType.ONE
    finally:
        cl.close()
