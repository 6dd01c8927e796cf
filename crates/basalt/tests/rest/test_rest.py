"""Every resource and representation of the REST gateway, with `requests`, against a real
`basalt server` (and a `basalt rest --server` gateway where the test says so), checked
against what HBase 2.6's REST server answers."""

import base64
import json
import threading
import time
import xml.etree.ElementTree as ET

import pytest
import requests

from basalt_server import BasaltRestGateway, BasaltServer

JSON = {"Accept": "application/json", "Content-Type": "application/json"}
XML = {"Accept": "text/xml", "Content-Type": "text/xml"}
PB = {"Accept": "application/x-protobuf", "Content-Type": "application/x-protobuf"}


def b64(b):
    return base64.b64encode(b if isinstance(b, bytes) else b.encode()).decode()


def unb64(s):
    return base64.b64decode(s)


# --- protobuf, by hand: enough of the wire format for CellSet and Scanner -----------------

def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, value):
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def pb_cellset(rows):
    """rows: [(key, [(column, timestamp or None, value)])]"""
    out = b""
    for key, cells in rows:
        row = field(1, key)
        for col, ts, val in cells:
            cell = field(2, col) + (field(3, ts) if ts is not None else b"") + field(4, val)
            row += field(2, cell)
        out += field(1, row)
    return out


def pb_fields(data):
    i, out = 0, []
    while i < len(data):
        key, i = read_varint(data, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, i = read_varint(data, i)
        else:
            n, i = read_varint(data, i)
            v, i = data[i:i + n], i + n
        out.append((num, v))
    return out


def read_varint(data, i):
    shift = n = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def pb_rows(data):
    rows = []
    for num, row in pb_fields(data):
        assert num == 1
        key, cells = None, []
        for f, v in pb_fields(row):
            if f == 1:
                key = v
            else:
                c = dict(pb_fields(v))
                cells.append((c[2], c[3], c.get(4, b"")))
        rows.append((key, cells))
    return rows


# --- fixtures --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    with BasaltServer() as s:
        yield s
        assert s.alive()


@pytest.fixture
def table(server, request):
    """A fresh table `name` with families cf (3 versions) and cf2."""
    name = request.node.name[:60].replace("[", "_").replace("]", "")
    body = {"name": name, "ColumnSchema": [{"name": "cf", "VERSIONS": "3"}, {"name": "cf2"}]}
    r = requests.put(f"{server.url}/{name}/schema", json=body, headers=JSON)
    assert r.status_code == 201, r.text
    yield f"{server.url}/{name}"
    requests.delete(f"{server.url}/{name}/schema")


def put_json(url, rows, **kw):
    body = {"Row": [{"key": b64(k), "Cell": [dict({"column": b64(c), "$": b64(v)}, **({"timestamp": t} if t else {}))
                                              for c, v, t in cells]} for k, cells in rows]}
    return requests.put(f"{url}/fakerow", data=json.dumps(body), headers=JSON, **kw)


def get_json(url, path, **params):
    r = requests.get(f"{url}/{path}", headers={"Accept": "application/json"}, params=params)
    if r.status_code != 200:
        return r.status_code, None
    return 200, [(unb64(row["key"]), [(unb64(c["column"]), c["timestamp"], unb64(c["$"])) for c in row["Cell"]])
                 for row in r.json()["Row"]]


def values(rows):
    return [(k, [(c, v) for c, _, v in cells]) for k, cells in rows]


# --- version, status, tables, namespaces -----------------------------------------------------

def test_version_in_every_representation(server):
    j = requests.get(f"{server.url}/version", headers={"Accept": "application/json"})
    assert j.status_code == 200 and j.headers["Content-Type"] == "application/json"
    assert j.json()["REST"] == "0.0.3" and j.json()["Jersey"] == ""
    x = ET.fromstring(requests.get(f"{server.url}/version", headers={"Accept": "text/xml"}).content)
    assert x.tag == "Version" and x.get("REST") == "0.0.3"
    t = requests.get(f"{server.url}/version")
    assert t.headers["Content-Type"] == "text/plain" and t.text.startswith("rest 0.0.3 [JVM: ")
    p = dict(pb_fields(requests.get(f"{server.url}/version", headers={"Accept": "application/x-protobuf"}).content))
    assert p[1] == b"0.0.3"
    c = requests.get(f"{server.url}/version/cluster", headers={"Accept": "application/json"})
    assert c.json()["Version"].startswith("2.")
    assert requests.get(f"{server.url}/version/cluster", headers={"Accept": "application/x-protobuf"}).status_code == 406
    assert requests.get(f"{server.url}/version", headers={"Accept": "image/png"}).status_code == 406


def test_cluster_status_lists_the_live_server_and_its_regions(server, table):
    s = requests.get(f"{server.url}/status/cluster", headers={"Accept": "application/json"}).json()
    assert len(s["LiveNodes"]) == 1 and s["DeadNodes"] == []
    names = [unb64(r["name"]) for r in s["LiveNodes"][0]["Region"]]
    t = table.rsplit("/", 1)[1].encode()
    assert any(n.startswith(t + b",") for n in names), names
    assert s["regions"] == len(names)
    x = ET.fromstring(requests.get(f"{server.url}/status/cluster", headers={"Accept": "text/xml"}).content)
    assert x.tag == "ClusterStatus" and x.find("LiveNodes/Node") is not None


def test_table_list_and_exists(server, table):
    name = table.rsplit("/", 1)[1]
    j = requests.get(f"{server.url}/", headers={"Accept": "application/json"}).json()
    assert {"name": name} in j["table"]
    assert name + "\n" in requests.get(f"{server.url}/").text
    x = ET.fromstring(requests.get(f"{server.url}/", headers={"Accept": "text/xml"}).content)
    assert name in [t.get("name") for t in x.findall("table")]
    assert requests.get(f"{table}/exists").status_code == 200
    assert requests.get(f"{server.url}/no_such_table/exists").status_code == 404


def test_namespaces_create_alter_list_and_drop(server):
    url = f"{server.url}/namespaces/ns_rest"
    r = requests.post(url, headers={"Content-Type": "application/json"}, json={"properties": {"a": "1"}})
    assert r.status_code == 201 and r.headers["Location"].endswith("/namespaces/ns_rest")
    assert requests.post(url).status_code == 403
    assert requests.get(url, headers={"Accept": "application/json"}).json() == {"properties": {"a": "1"}}
    r = requests.put(url, data='<NamespaceProperties><properties><entry><key>b</key><value>2</value></entry></properties></NamespaceProperties>',
                     headers={"Content-Type": "text/xml"})
    assert r.status_code == 200
    assert requests.get(url, headers={"Accept": "application/json"}).json() == {"properties": {"b": "2"}}
    assert "ns_rest" in requests.get(f"{server.url}/namespaces", headers={"Accept": "application/json"}).json()["Namespace"]
    r = requests.put(f"{server.url}/ns_rest:t/schema", json={"name": "x", "ColumnSchema": [{"name": "f"}]}, headers=JSON)
    assert r.status_code == 201
    assert requests.get(f"{url}/tables", headers={"Accept": "application/json"}).json() == {"table": [{"name": "t"}]}
    assert {"name": "ns_rest:t"} in requests.get(f"{server.url}/", headers={"Accept": "application/json"}).json()["table"]
    assert requests.delete(url).status_code == 503  # not empty
    assert requests.delete(f"{server.url}/ns_rest:t/schema").status_code == 200
    assert requests.delete(url).status_code == 200
    assert requests.delete(url).status_code == 404
    assert requests.put(url, json={"properties": {}}, headers=JSON).status_code == 403


# --- schema ----------------------------------------------------------------------------------

def test_schema_create_replace_alter_and_drop_in_each_representation(server):
    url = f"{server.url}/schema_t/schema"
    r = requests.put(url, data='<TableSchema name="schema_t" IS_META="false"><ColumnSchema name="a" VERSIONS="5" TTL="86400"/></TableSchema>', headers=XML)
    assert r.status_code == 201 and r.headers["Location"].endswith("/schema_t/schema")
    s = requests.get(url, headers={"Accept": "application/json"}).json()
    assert s["name"] == "schema_t" and s["ColumnSchema"][0]["VERSIONS"] == "5" and s["ColumnSchema"][0]["TTL"] == "86400"
    # POST adds a family and changes one.
    r = requests.post(url, json={"name": "schema_t", "ColumnSchema": [{"name": "b", "BLOOMFILTER": "ROWCOL"}, {"name": "a", "VERSIONS": 2}]}, headers=JSON)
    assert r.status_code == 200
    s = requests.get(url, headers={"Accept": "application/json"}).json()
    assert {c["name"]: c["VERSIONS"] for c in s["ColumnSchema"]} == {"a": "2", "b": "1"}
    # PUT replaces: families not named are dropped. Protobuf body.
    col = field(1, b"c") + field(2, field(1, b"IN_MEMORY") + field(2, b"true")) + field(4, 7)
    r = requests.put(url, data=field(1, b"schema_t") + field(3, col), headers=PB)
    assert r.status_code == 201
    p = pb_fields(requests.get(url, headers={"Accept": "application/x-protobuf"}).content)
    columns = [dict(pb_fields(v)) for n, v in p if n == 3]
    assert [c[1] for c in columns] == [b"c"] and columns[0][4] == 7
    x = ET.fromstring(requests.get(url, headers={"Accept": "text/xml"}).content)
    assert [(c.get("name"), c.get("IN_MEMORY")) for c in x.findall("ColumnSchema")] == [("c", "true")]
    assert requests.get(url).text.startswith("{ NAME=> 'schema_t'")
    assert requests.delete(url).status_code == 200
    assert requests.get(url).status_code == 404
    assert requests.delete(url).status_code == 404


def test_regions_in_json_xml_and_protobuf(server, table):
    j = requests.get(f"{table}/regions", headers={"Accept": "application/json"}).json()
    assert j["name"] == table.rsplit("/", 1)[1] and len(j["Region"]) == 1
    region = j["Region"][0]
    assert region["startKey"] == "" and region["endKey"] == "" and ":" in region["location"]
    assert region["name"].startswith(j["name"] + ",,")
    p = pb_fields(requests.get(f"{table}/regions", headers={"Accept": "application/x-protobuf"}).content)
    assert p[0] == (1, j["name"].encode())
    assert requests.get(f"{server.url}/missing/regions").status_code == 404


# --- rows ------------------------------------------------------------------------------------

def test_a_cell_set_written_in_each_representation_reads_back_in_each(table):
    assert put_json(table, [(b"j", [(b"cf:a", b"\x00\xffjson", None)])]).status_code == 200
    xml = f'<CellSet><Row key="{b64("x")}"><Cell column="{b64("cf:a")}" timestamp="5">{b64(b"xml")}</Cell></Row></CellSet>'
    assert requests.post(f"{table}/fakerow", data=xml, headers=XML).status_code == 200
    body = pb_cellset([(b"p", [(b"cf:a", 7, b"pb"), (b"cf2:b", None, b"pb2")])])
    assert requests.put(f"{table}/fakerow", data=body, headers=PB).status_code == 200
    assert values(get_json(table, "j")[1]) == [(b"j", [(b"cf:a", b"\x00\xffjson")])]
    x = ET.fromstring(requests.get(f"{table}/x", headers={"Accept": "text/xml"}).content)
    cell = x.find("Row/Cell")
    assert unb64(x.find("Row").get("key")) == b"x" and cell.get("timestamp") == "5" and unb64(cell.text) == b"xml"
    rows = pb_rows(requests.get(f"{table}/p", headers={"Accept": "application/x-protobuf"}).content)
    assert [(k, [(c, v) for c, _, v in cells]) for k, cells in rows] == [(b"p", [(b"cf:a", b"pb"), (b"cf2:b", b"pb2")])]
    assert rows[0][1][0][1] == 7


def test_one_value_as_octets_both_ways(table):
    r = requests.put(f"{table}/r1/cf:bin", data=b"\x01\x02", headers={"Content-Type": "application/octet-stream", "X-Timestamp": "42"})
    assert r.status_code == 200
    g = requests.get(f"{table}/r1/cf:bin")
    assert g.status_code == 200 and g.content == b"\x01\x02" and g.headers["X-Timestamp"] == "42"
    assert g.headers["Content-Type"] == "application/octet-stream"
    # X-Row and X-Column override the path.
    r = requests.put(f"{table}/ignored/cf:x", data=b"v", headers={"Content-Type": "application/octet-stream", "X-Row": "r2", "X-Column": "cf:y"})
    assert r.status_code == 200
    assert requests.get(f"{table}/r2/cf:y").content == b"v"
    bad = requests.get(f"{table}/r1")
    assert bad.status_code == 400 and "exactly 1 column" in bad.text


def test_versions_timestamps_and_column_lists(table):
    for ts, v in ((10, b"v10"), (20, b"v20"), (30, b"v30")):
        put_json(table, [(b"r", [(b"cf:a", v, ts)])])
    put_json(table, [(b"r", [(b"cf:b", b"b", 15), (b"cf2:c", b"c", 15)])])
    assert values(get_json(table, "r/cf:a")[1]) == [(b"r", [(b"cf:a", b"v30")])]
    assert values(get_json(table, "r/cf:a", v=3)[1]) == [(b"r", [(b"cf:a", b"v30"), (b"cf:a", b"v20"), (b"cf:a", b"v10")])]
    # One path timestamp is exactly that timestamp (HBase 2.5.12+/2.6.3+).
    assert values(get_json(table, "r/cf:a/20")[1]) == [(b"r", [(b"cf:a", b"v20")])]
    assert get_json(table, "r/cf:a/25")[0] == 404
    assert values(get_json(table, "r/cf:a/10,30", v=5)[1]) == [(b"r", [(b"cf:a", b"v20"), (b"cf:a", b"v10")])]
    assert values(get_json(table, "r/cf:b,cf2")[1]) == [(b"r", [(b"cf:b", b"b"), (b"cf2:c", b"c")])]
    assert values(get_json(table, "r/cf2/")[1]) == [(b"r", [(b"cf2:c", b"c")])]
    nf = requests.get(f"{table}/nothing", headers={"Accept": "application/json"})
    assert nf.status_code == 404 and nf.headers["Content-Type"] == "text/plain" and nf.text.startswith("Not found")


def test_ranges_prefixes_and_base64_keys(table):
    for k in (b"a1", b"a2", b"b1", b"\xff\x00"):
        put_json(table, [(k, [(b"cf:q", k, None)])])
    assert [k for k, _ in get_json(table, "a*/cf")[1]] == [b"a1", b"a2"]
    assert [k for k, _ in get_json(table, "a2,b2/cf:q")[1]] == [b"a2", b"b1"]
    key = base64.urlsafe_b64encode(b"\xff\x00").decode().rstrip("=")
    assert values(get_json(table, f"{key}/{base64.urlsafe_b64encode(b'cf:q').decode()}", e="b64")[1]) == [(b"\xff\x00", [(b"cf:q", b"\xff\x00")])]
    r = requests.get(f"{table}/{key}", headers={"Accept": "application/json", "Encoding": "b64"})
    assert r.status_code == 200 and unb64(r.json()["Row"][0]["key"]) == b"\xff\x00"
    assert requests.get(f"{table}/%FF%00/cf:q").content == b"\xff\x00"
    assert requests.get(f"{table}/x", params={"e": "rot13"}, headers={"Accept": "application/json"}).status_code == 400


def test_deletes_of_row_family_column_and_versions(table):
    for ts in (1, 2, 3):
        put_json(table, [(b"d", [(b"cf:a", b"a%d" % ts, ts), (b"cf:b", b"b", ts), (b"cf2:c", b"c", ts)])])
    assert requests.delete(f"{table}/d/cf:a/2").status_code == 200  # versions up to 2
    assert values(get_json(table, "d/cf:a", v=3)[1]) == [(b"d", [(b"cf:a", b"a3")])]
    assert requests.delete(f"{table}/d/cf2").status_code == 200
    assert get_json(table, "d/cf2")[0] == 404
    assert requests.delete(f"{table}/d/cf:b").status_code == 200
    assert values(get_json(table, "d")[1]) == [(b"d", [(b"cf:a", b"a3")])]
    assert requests.delete(f"{table}/d").status_code == 200
    assert get_json(table, "d")[0] == 404
    assert requests.delete(f"{table}/d/nofamily").status_code == 404


def test_check_and_put_and_check_and_delete(table):
    put_json(table, [(b"c", [(b"cf:a", b"1", None)])])
    ok = {"Row": [{"key": b64("c"), "Cell": [{"column": b64("cf:a"), "$": b64("2")}, {"column": b64("cf:a"), "$": b64("1")}]}]}
    assert requests.put(f"{table}/c?check=put", json=ok, headers=JSON).status_code == 200
    assert requests.get(f"{table}/c/cf:a").content == b"2"
    assert requests.put(f"{table}/c?check=put", json=ok, headers=JSON).status_code == 304
    assert requests.get(f"{table}/c/cf:a").content == b"2"
    mismatch = {"Row": [{"key": b64("c"), "Cell": [{"column": b64("cf:b"), "$": b64("x")}, {"column": b64("cf:a"), "$": b64("2")}]}]}
    assert requests.put(f"{table}/c?check=put", json=mismatch, headers=JSON).status_code == 400
    delete = {"Row": [{"key": b64("c"), "Cell": [{"column": b64("cf:a"), "$": b64("9")}]}]}
    assert requests.put(f"{table}/c?check=delete", json=delete, headers=JSON).status_code == 304
    delete["Row"][0]["Cell"][0]["$"] = b64("2")
    assert requests.put(f"{table}/c?check=delete", json=delete, headers=JSON).status_code == 200
    assert get_json(table, "c")[0] == 404
    assert requests.put(f"{table}/c?check=sometimes", json=delete, headers=JSON).status_code == 400


def test_increment_and_append_with_and_without_results(table):
    inc = {"Row": [{"key": b64("n"), "Cell": [{"column": b64("cf:n"), "$": b64("5")}]}]}
    assert requests.put(f"{table}/n?check=increment", json=inc, headers=JSON).status_code == 200
    r = requests.put(f"{table}/n?check=increment&rr=true", json=inc, headers=JSON)
    assert r.status_code == 200 and unb64(r.json()["Row"][0]["Cell"][0]["$"]) == (10).to_bytes(8, "big")
    app = {"Row": [{"key": b64("s"), "Cell": [{"column": b64("cf:s"), "$": b64("ab")}]}]}
    requests.put(f"{table}/s?check=append", json=app, headers=JSON)
    r = requests.put(f"{table}/s?check=append&rr=true", json=app, headers=JSON)
    assert unb64(r.json()["Row"][0]["Cell"][0]["$"]) == b"abab"
    bad = {"Row": [{"key": b64("n"), "Cell": [{"column": b64("cf:n"), "$": b64("five")}]}]}
    assert requests.put(f"{table}/n?check=increment", json=bad, headers=JSON).status_code == 400


def test_multiget_reads_the_rows_it_finds(table):
    for k in (b"m1", b"m2", b"m3"):
        put_json(table, [(k, [(b"cf:a", k + b"a", None), (b"cf:b", k + b"b", None)])])
    code, rows = get_json(table, "multiget", row=["m1", "nope", "m3/cf:b"])
    assert code == 200 and values(rows) == [(b"m1", [(b"cf:a", b"m1a"), (b"cf:b", b"m1b")]), (b"m3", [(b"cf:b", b"m3b")])]
    assert values(get_json(table, "multiget/cf:a", row=["m2"])[1]) == [(b"m2", [(b"cf:a", b"m2a")])]
    assert values(get_json(table, "multiget", row=["m1", "m2"], filter="QualifierFilter(=,'binary:b')")[1]) == [
        (b"m1", [(b"cf:b", b"m1b")]), (b"m2", [(b"cf:b", b"m2b")])]
    r = requests.get(f"{table}/multiget", params={"row": ["x", "y"]}, headers={"Accept": "application/json"})
    assert r.status_code == 404 and r.text.startswith("No rows found.")


# --- scanners --------------------------------------------------------------------------------

def open_scanner(table, body, headers=XML):
    r = requests.put(f"{table}/scanner", data=body, headers=headers)
    assert r.status_code == 201, r.text
    location = r.headers["Location"]
    assert location.startswith("http://") and "/scanner/" in location
    return location


def drain(location, **params):
    pages = []
    while True:
        r = requests.get(location, headers={"Accept": "application/json"}, params=params)
        if r.status_code == 204:
            return pages
        assert r.status_code == 200, r.text
        pages.append([(unb64(row["key"]), [unb64(c["column"]) for c in row["Cell"]]) for row in r.json()["Row"]])


def test_a_scanner_pages_by_cells_and_rows_and_ends_with_204(table):
    for i in range(5):
        put_json(table, [(b"s%d" % i, [(b"cf:a", b"x", None), (b"cf:b", b"y", None), (b"cf2:c", b"z", None)])])
    loc = open_scanner(table, '<Scanner batch="4"/>')
    pages = drain(loc)
    assert [sum(len(cols) for _, cols in p) for p in pages] == [4, 4, 4, 3]
    # A row split across pages continues under the same key.
    assert pages[0] == [(b"s0", [b"cf:a", b"cf:b", b"cf2:c"]), (b"s1", [b"cf:a"])]
    assert pages[1][0] == (b"s1", [b"cf:b", b"cf2:c"])
    assert requests.delete(loc).status_code == 200
    assert requests.get(loc, headers={"Accept": "application/json"}).status_code == 404
    assert requests.delete(loc).status_code == 404
    spec = {"startRow": b64("s1"), "endRow": b64("s4"), "column": [b64("cf:a")]}
    loc = open_scanner(table, json.dumps(spec), JSON)
    assert drain(loc, n=2) == [[(b"s1", [b"cf:a"]), (b"s2", [b"cf:a"])], [(b"s3", [b"cf:a"])]]
    body = field(1, b"s3") + field(3, b"cf2") + field(4, 100)
    loc = open_scanner(table, body, PB)
    r = requests.get(loc, headers={"Accept": "application/x-protobuf"})
    assert [(k, [c for c, _, _ in cells]) for k, cells in pb_rows(r.content)] == [(b"s3", [b"cf2:c"]), (b"s4", [b"cf2:c"])]
    loc = open_scanner(table, '<Scanner startRow="%s"/>' % b64("s4"))
    one = requests.get(loc, headers={"Accept": "application/octet-stream"})
    assert one.content == b"x" and unb64(one.headers["X-Row"]) == b"s4" and unb64(one.headers["X-Column"]) == b"cf:a"
    assert "X-Timestamp" in one.headers


def test_a_scanner_reads_every_version_unless_told(table):
    for ts in (1, 2, 3):
        put_json(table, [(b"v", [(b"cf:a", b"%d" % ts, ts)])])
    assert drain(open_scanner(table, "<Scanner/>")) == [[(b"v", [b"cf:a"] * 3)]]
    assert drain(open_scanner(table, '<Scanner maxVersions="1"/>')) == [[(b"v", [b"cf:a"])]]
    assert drain(open_scanner(table, '<Scanner startTime="2" endTime="3"/>')) == [[(b"v", [b"cf:a"])]]


FILTERS = [
    ({"type": "PrefixFilter", "value": b64("r1")}, [b"r1", b"r10"]),
    ({"type": "RowFilter", "op": "EQUAL", "comparator": {"type": "BinaryComparator", "value": b64("r2")}}, [b"r2"]),
    ({"type": "RowFilter", "op": "GREATER_OR_EQUAL", "comparator": {"type": "BinaryPrefixComparator", "value": b64("r3")}}, [b"r3", b"r4"]),
    ({"type": "RowFilter", "op": "EQUAL", "comparator": {"type": "RegexStringComparator", "value": "^r1.$"}}, [b"r10"]),
    ({"type": "ValueFilter", "op": "EQUAL", "comparator": {"type": "SubstringComparator", "value": "V2"}}, [b"r2"]),
    ({"type": "QualifierFilter", "op": "EQUAL", "comparator": {"type": "BinaryComparator", "value": b64("b")}}, [b"r4"]),
    ({"type": "FamilyFilter", "op": "EQUAL", "comparator": {"type": "BinaryComparator", "value": b64("cf2")}}, [b"r3"]),
    ({"type": "SingleColumnValueFilter", "family": b64("cf"), "qualifier": b64("a"), "op": "EQUAL",
      "comparator": {"type": "BinaryComparator", "value": b64("v1")}, "ifMissing": True}, [b"r1"]),
    ({"type": "SingleColumnValueFilter", "family": b64("cf"), "qualifier": b64("a"), "op": "EQUAL",
      "comparator": {"type": "BinaryComparator", "value": b64("v1")}}, [b"r1", b"r3"]),
    ({"type": "ColumnPrefixFilter", "value": b64("b")}, [b"r4"]),
    ({"type": "MultipleColumnPrefixFilter", "prefixes": [b64("b"), b64("c")]}, [b"r3", b"r4"]),
    ({"type": "ColumnRangeFilter", "minColumn": b64("b"), "minColumnInclusive": True, "maxColumn": b64("d"), "maxColumnInclusive": False}, [b"r3", b"r4"]),
    ({"type": "InclusiveStopFilter", "value": b64("r2")}, [b"r1", b"r10", b"r2"]),
    ({"type": "PageFilter", "value": "2"}, [b"r1", b"r10"]),
    ({"type": "KeyOnlyFilter"}, [b"r1", b"r10", b"r2", b"r3", b"r4"]),
    ({"type": "FirstKeyOnlyFilter"}, [b"r1", b"r10", b"r2", b"r3", b"r4"]),
    ({"type": "ColumnCountGetFilter", "limit": 1}, [b"r1", b"r10", b"r2", b"r3", b"r4"]),
    ({"type": "ColumnPaginationFilter", "limit": 1, "offset": 1}, [b"r4"]),
    ({"type": "TimestampsFilter", "timestamps": [7]}, [b"r2"]),
    ({"type": "DependentColumnFilter", "family": b64("cf"), "qualifier": b64("a"), "dropDependentColumn": False}, [b"r1", b"r10", b"r2", b"r4"]),
    ({"type": "SkipFilter", "filters": [{"type": "ValueFilter", "op": "NOT_EQUAL", "comparator": {"type": "BinaryComparator", "value": b64("vb")}}]}, [b"r1", b"r10", b"r2", b"r3"]),
    ({"type": "WhileMatchFilter", "filters": [{"type": "RowFilter", "op": "LESS", "comparator": {"type": "BinaryComparator", "value": b64("r2")}}]}, [b"r1", b"r10"]),
    ({"type": "FilterList", "op": "MUST_PASS_ONE", "filters": [{"type": "PrefixFilter", "value": b64("r2")}, {"type": "PrefixFilter", "value": b64("r3")}]}, [b"r2", b"r3"]),
    ({"type": "FilterList", "op": "MUST_PASS_ALL", "filters": [{"type": "PrefixFilter", "value": b64("r1")},
      {"type": "RowFilter", "op": "NOT_EQUAL", "comparator": {"type": "BinaryComparator", "value": b64("r1")}}]}, [b"r10"]),
]


@pytest.fixture
def filter_table(table):
    put_json(table, [(b"r1", [(b"cf:a", b"v1", 5)]), (b"r10", [(b"cf:a", b"v10", 5)]), (b"r2", [(b"cf:a", b"V2", 7)]),
                     (b"r3", [(b"cf2:c", b"vc", 5)]), (b"r4", [(b"cf:a", b"v4", 5), (b"cf:b", b"vb", 5)])])
    return table


@pytest.mark.parametrize("spec,rows", FILTERS, ids=[f[0]["type"] + str(i) for i, f in enumerate(FILTERS)])
def test_each_filter_of_the_json_format_selects_what_hbase_selects(filter_table, spec, rows):
    loc = open_scanner(filter_table, json.dumps({"filter": json.dumps(spec), "maxVersions": 1}), JSON)
    got = [k for page in drain(loc) for k, _ in page]
    assert got == rows
    # The same spec through XML.
    loc = open_scanner(filter_table, f"<Scanner><filter>{json.dumps(spec)}</filter></Scanner>".replace("&", "&amp;"))
    assert [k for page in drain(loc) for k, _ in page] == rows


def test_concurrent_scanners_each_see_their_own_rows(table):
    put_json(table, [(b"c%02d" % i, [(b"cf:a", b"%d" % i, None)]) for i in range(40)])
    results, errors = {}, []

    def scan(start):
        try:
            spec = {"startRow": b64(b"c%02d" % start), "endRow": b64(b"c%02d" % (start + 10)), "batch": 3}
            loc = open_scanner(table, json.dumps(spec), JSON)
            results[start] = [k for page in drain(loc) for k, _ in page]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=scan, args=(s,)) for s in (0, 10, 20, 30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert results == {s: [b"c%02d" % i for i in range(s, s + 10)] for s in (0, 10, 20, 30)}


def test_scanner_leases_expire():
    with BasaltRestGateway(["--scanner-timeout-ms", "300"]) as g:
        requests.put(f"{g.url}/lease/schema", json={"name": "lease", "ColumnSchema": [{"name": "cf"}]}, headers=JSON)
        put_json(f"{g.url}/lease", [(b"r", [(b"cf:a", b"v", None)])])
        loc = open_scanner(f"{g.url}/lease", '<Scanner batch="1"/>')
        used = open_scanner(f"{g.url}/lease", '<Scanner batch="1"/>')
        # Read within the lease, a scanner stays.
        assert requests.get(used, headers={"Accept": "application/json"}).status_code == 200
        # Left alone past its lease (the time that must pass is what is tested), it is gone.
        time.sleep(0.6)
        assert requests.get(loc, headers={"Accept": "application/json"}).status_code == 404
        assert requests.delete(used).status_code == 404


def test_bad_scanner_specs_are_400s(table):
    for body, headers in (('""', JSON), ("{", JSON), ("<Scanner", XML), ("\xff\xff", PB),
                          (json.dumps({"filter": '{"type":"NoSuchFilter"}'}), JSON),
                          (json.dumps({"filter": "{"}), JSON), (json.dumps({"batch": 0}), JSON),
                          ('<Scanner startRow="@@"/>', XML)):
        r = requests.put(f"{table}/scanner", data=body, headers=headers)
        assert r.status_code == 400, (body, r.status_code, r.text)
    assert requests.put(f"{table.rsplit('/', 1)[0]}/missing_table/scanner", data="<Scanner/>", headers=XML).status_code == 404


def test_the_stateless_scan_with_its_parameters(table):
    put_json(table, [(b"p%d" % i, [(b"cf:a", b"%d" % i, None), (b"cf2:b", b"x", None)]) for i in range(6)])
    j = requests.get(f"{table}/p*", params={"column": "cf:a", "limit": "3"}, headers={"Accept": "application/json"}).json()
    assert [unb64(r["key"]) for r in j["Row"]] == [b"p0", b"p1", b"p2"]
    assert all(len(r["Cell"]) == 1 for r in j["Row"])
    j = requests.get(f"{table}/*", params={"startrow": "p4", "endrow": "p1", "reversed": "true"}, headers={"Accept": "application/json"}).json()
    assert [unb64(r["key"]) for r in j["Row"]] == [b"p4", b"p3", b"p2"]
    j = requests.get(f"{table}/*", params={"filter": "ValueFilter(=,'binary:5')"}, headers={"Accept": "application/json"}).json()
    assert [unb64(r["key"]) for r in j["Row"]] == [b"p5"]
    x = ET.fromstring(requests.get(f"{table}/p*", params={"startrow": "p5"}, headers={"Accept": "text/xml"}).content)
    assert [unb64(r.get("key")) for r in x.findall("Row")] == [b"p5"]
    data = requests.get(f"{table}/*", headers={"Accept": "application/x-protobuf"}).content
    keys, i = [], 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 2], "big")
        keys += [k for k, _ in pb_rows(data[i + 2:i + 2 + n])]
        i += 2 + n
    assert keys == [b"p%d" % i for i in range(6)]
    assert requests.get(f"{table}/*", params={"limit": "many"}).status_code == 404
    assert requests.get(f"{table}/*", params={"filter": "Nope("}, headers={"Accept": "application/json"}).status_code == 400


# --- bad input -------------------------------------------------------------------------------

def test_bad_bodies_write_nothing(server, table):
    for body, headers in (("{", JSON), ('{"Row":[{"key":"!!","Cell":[]}]}', JSON), ("<CellSet><Row>", XML),
                          ("\x0a\xff\xff", PB), ('{"Row":[{"key":"cg==","Cell":[{"column":"Y2Y=","$":"dg=="}]}]}', JSON),
                          ("<!DOCTYPE x [<!ENTITY e SYSTEM 'file:///etc/passwd'>]><CellSet/>", XML)):
        r = requests.put(f"{table}/r", data=body, headers=headers)
        assert r.status_code == 400, (body, r.status_code, r.text)
        assert r.headers["Content-Type"] == "text/plain"
    # One row of three names a family the table lacks: 404 and none of them is written.
    r = put_json(table, [(b"ok1", [(b"cf:a", b"1", None)]), (b"bad", [(b"nofamily:a", b"1", None)]), (b"ok2", [(b"cf:a", b"1", None)])])
    assert r.status_code == 404 and r.text.startswith("Not found")
    assert get_json(table, "ok1")[0] == 404 and get_json(table, "ok2")[0] == 404
    # A cell over HBase's 10 MiB limit.
    r = put_json(table, [(b"big", [(b"cf:a", b"x" * (10 * 1024 * 1024 + 1), None)])])
    assert r.status_code == 400 and get_json(table, "big")[0] == 404
    r = requests.put(f"{table}/r", data="x", headers={"Content-Type": "text/csv"})
    assert r.status_code == 415
    assert put_json(f"{server.url}/nosuch", [(b"r", [(b"cf:a", b"1", None)])]).status_code == 404
    assert server.alive()


def test_hostile_paths_and_huge_bodies(server, table):
    for path in ("..%2F..%2Fetc%2Fpasswd/schema", "..%2F..%2Fetc/r1", "%00bad/schema", "a%zz/x"):
        r = requests.get(f"{server.url}/{path}", headers={"Accept": "application/json"})
        assert r.status_code in (400, 404), (path, r.status_code)
    r = requests.put(f"{server.url}/..%2Fescape/schema", json={"ColumnSchema": [{"name": "cf"}]}, headers=JSON)
    assert r.status_code == 400
    huge = b"{" + b" " * (300 * 1024 * 1024)
    try:
        r = requests.put(f"{table}/r", data=huge, headers=JSON)
        assert r.status_code == 413
    except requests.exceptions.ConnectionError:
        pass  # the server may close the connection once it has answered 413
    assert requests.get(f"{server.url}/version").status_code == 200


def test_a_read_only_gateway_refuses_every_write():
    with BasaltRestGateway(["--read-only"]) as g:
        # Made through the server's own REST gateway, which is writable.
        requests.put(f"{g.server_url}/ro/schema", json={"name": "ro", "ColumnSchema": [{"name": "cf"}]}, headers=JSON)
        put_json(f"{g.server_url}/ro", [(b"r", [(b"cf:a", b"v", None)])])
        assert put_json(f"{g.url}/ro", [(b"r", [(b"cf:a", b"w", None)])]).status_code == 403
        assert requests.delete(f"{g.url}/ro/r").status_code == 403
        assert requests.delete(f"{g.url}/ro/schema").status_code == 403
        assert requests.put(f"{g.url}/ro/scanner", data="<Scanner/>", headers=XML).status_code == 403
        assert requests.get(f"{g.url}/ro/r/cf:a").content == b"v"
