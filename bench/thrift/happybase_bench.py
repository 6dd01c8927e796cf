"""Throughput of Basalt's Thrift gateway from happybase, in the shapes of YCSB's load,
workload C (reads) and workload E (short scans), so the figures sit beside
`basalt bench ycsb` against the same server: 10 fields of 100 bytes, `user<n>` keys.

    python happybase_bench.py --port 9090 [--records 100000] [--operations 100000]
        [--processes 8] [--transport buffered|framed] [--protocol binary|compact]

Each client process has its own connection (Python threads would share one interpreter lock).
Prints operations per second and latency percentiles per phase.
"""

import argparse
import multiprocessing as mp
import random
import time

import happybase

TABLE = b"thrift_usertable"
FIELDS = 10
FIELD_BYTES = 100


def key(n):
    return b"user%012d" % n


def record(rng):
    return {b"family:field%d" % f: rng.randbytes(FIELD_BYTES) for f in range(FIELDS)}


def percentile(sorted_us, p):
    return sorted_us[min(len(sorted_us) - 1, int(len(sorted_us) * p))]


def run_phase(args, worker, share):
    """Runs `worker(conn, rng, part, n)` in each process; returns (ops/s, latencies in us)."""
    with mp.Pool(args.processes) as pool:
        started = time.perf_counter()
        parts = pool.starmap(worker, [(vars(args), p, share) for p in range(args.processes)])
        took = time.perf_counter() - started
    lat = sorted(x for part in parts for x in part)
    return len(lat) / took, lat


def connect(a):
    return happybase.Connection(host=a["host"], port=a["port"], transport=a["transport"],
                                protocol=a["protocol"])


def load(a, part, n):
    rng = random.Random(part)
    t = connect(a).table(TABLE)
    lat = []
    for i in range(part, a["records"], a["processes"]):
        s = time.perf_counter()
        t.put(key(i), record(rng))
        lat.append((time.perf_counter() - s) * 1e6)
    return lat


def batch_load(a, part, n):
    rng = random.Random(part)
    t = connect(a).table(TABLE)
    lat = []
    mine = list(range(part, a["records"], a["processes"]))
    for start in range(0, len(mine), 100):
        chunk = mine[start:start + 100]
        s = time.perf_counter()
        with t.batch() as b:
            for i in chunk:
                b.put(key(i), record(rng))
        lat.extend([(time.perf_counter() - s) * 1e6 / len(chunk)] * len(chunk))
    return lat


def timed(a, seed, n, op):
    """Runs `op(table, rng, records)` `n` times; returns each call's latency in us."""
    rng = random.Random(seed)
    t = connect(a).table(TABLE)
    lat = []
    for _ in range(n):
        s = time.perf_counter()
        op(t, rng, a["records"])
        lat.append((time.perf_counter() - s) * 1e6)
    return lat


def read_one(t, rng, records):
    row = t.row(key(rng.randrange(records)))
    assert len(row) == FIELDS


def scan_one(t, rng, records):
    length = rng.randint(1, 100)
    start = key(rng.randrange(records))
    rows = list(t.scan(row_start=start, limit=length, batch_size=length))
    assert 0 < len(rows) <= length


def read(a, part, n):
    return timed(a, 1000 + part, n, read_one)


def scan(a, part, n):
    return timed(a, 2000 + part, n, scan_one)


def report(name, ops, lat):
    print(f"{name:>10}: {ops:9.0f} ops/s   p50 {percentile(lat, 0.5):7.0f} us   "
          f"p99 {percentile(lat, 0.99):7.0f} us   ({len(lat)} ops)", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9090)
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--operations", type=int, default=100_000)
    p.add_argument("--processes", type=int, default=8)
    p.add_argument("--transport", default="buffered")
    p.add_argument("--protocol", default="binary")
    args = p.parse_args()
    c = connect(vars(args))
    if TABLE in c.tables():
        c.delete_table(TABLE, disable=True)
    c.create_table(TABLE, {"family": {"max_versions": 1, "block_cache_enabled": True}})
    print(f"happybase, {args.transport}/{args.protocol}, {args.processes} processes, "
          f"{args.records} records of {FIELDS}x{FIELD_BYTES} B", flush=True)
    share = args.operations // args.processes
    report("load", *run_phase(args, load, 0))
    report("read", *run_phase(args, read, share))
    report("scan", *run_phase(args, scan, max(1, share // 20)))
    c.delete_table(TABLE, disable=True)
    c.create_table(TABLE, {"family": {"max_versions": 1, "block_cache_enabled": True}})
    report("batch-load", *run_phase(args, batch_load, 0))
    c.delete_table(TABLE, disable=True)


if __name__ == "__main__":
    main()
