"""happybase on a cluster's table, through a `basalt thrift --server SEEDS` gateway: the
table's regions live on several region servers, and the gateway must read and write each row
on its region's server, scan across all of them, and list the regions with their servers.

    python cluster_check.py HOST:PORT TABLE ROWS

TABLE holds ROWS rows `row00000`..., each with f:q = `v<i>`, split into several regions.
Writes here are removed again, so the table is left as it was found.
"""

import sys

import happybase


def row(i):
    return b"row%05d" % i


def main(address, table_name, rows):
    host, port = address.rsplit(":", 1)
    conn = happybase.Connection(host, int(port))
    table = conn.table(table_name)

    regions = conn.client.getTableRegions(table_name.encode())
    servers = {(r.serverName, r.port) for r in regions}
    assert len(regions) >= 2 and len(servers) >= 2, f"one server holds everything: {regions}"

    # getRegionInfo reads hbase:meta (the master serves it on a cluster), from a meta key
    # made as HBase's clients make one: `table,row,99999999999999`.
    middle = row(rows // 2)
    info = conn.client.getRegionInfo(table_name.encode() + b"," + middle + b",99999999999999")
    assert info.startKey <= middle and (info.endKey == b"" or middle < info.endKey), info
    assert (info.serverName, info.port) in servers, info

    # One scan across every region, in order.
    keys = [k for k, _ in table.scan(columns=[b"f:q"], batch_size=250)]
    assert keys == [row(i) for i in range(rows)], f"scanned {len(keys)} rows of {rows}"
    # A reversed scan is not in Thrift1; a bounded scan across a region boundary is.
    first, last = rows // 3 - 50, rows // 3 + 50
    got = [k for k, _ in table.scan(row_start=row(first), row_stop=row(last))]
    assert got == [row(i) for i in range(first, last)], got

    # Batched writes to rows on every server, read back one by one and all at once.
    written = [row(i) + b"-thrift" for i in range(0, rows, 97)]
    with table.batch(batch_size=10) as b:
        for k in written:
            b.put(k, {b"f:t": k})
    assert all(table.row(k) == {b"f:t": k} for k in written)
    assert [k for k, _ in table.rows(written)] == written
    counter = row(rows // 2) + b"-counter"
    assert table.counter_inc(counter, b"f:c", 5) == 5
    assert table.counter_inc(counter, b"f:c", 2) == 7

    # Deleted again: the table is as it was.
    with table.batch() as b:
        for k in written + [counter]:
            b.delete(k)
    assert table.rows(written + [counter]) == []
    assert sum(1 for _ in table.scan(filter=b"KeyOnlyFilter()")) == rows
    conn.close()
    print(f"happybase on the cluster: {len(regions)} regions on {len(servers)} servers, "
          f"{rows} rows scanned, {len(written)} rows written and removed")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
