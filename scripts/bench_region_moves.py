#!/usr/bin/env python3
"""100 region moves through `basalt shell` on a running cluster, under a YCSB A load from
`basalt bench ycsb` (or idle with --idle); prints the moves' p50/p99 from the shell's own
`Took` lines, then the load's overall figures. The table is `usertable` as
`basalt bench ycsb --regions 12` loads it.

    scripts/bench_region_moves.py BASALT_BINARY SEEDS [--idle]
"""
import re
import subprocess
import sys


def shell(basalt, seeds, text):
    return subprocess.run([basalt, "shell", "-n", "--server", seeds], input=text,
                          capture_output=True, text=True, check=True).stdout


def main(basalt, seeds, idle):
    meta = shell(basalt, seeds, "scan 'hbase:meta', {COLUMNS => 'info:sn'}\n")
    where = {}
    for line in meta.splitlines():
        m = re.match(r"\s*usertable,.*\.([0-9a-f]{32})\.\s+column=info:sn, .*value=(\S+)", line)
        if m:
            where[m.group(1)] = m.group(2)
    regions, servers = sorted(where), sorted(set(where.values()))
    assert len(regions) > 1 and len(servers) > 1, (regions, servers)
    moves = []
    for i in range(100):
        region = regions[(i * 7) % len(regions)]
        dest = servers[(servers.index(where[region]) + 1) % len(servers)]
        where[region] = dest
        moves.append(f"move '{region}', '{dest}'\n")
    load = None if idle else subprocess.Popen(
        [basalt, "bench", "ycsb", "--workload", "a", "--server", seeds, "--records", "100000",
         "--operations", "400000", "--threads", "8", "--no-load"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = shell(basalt, seeds, "".join(moves))
    took = sorted(float(t) * 1000 for t in re.findall(r"Took ([0-9.]+) seconds", out))
    assert len(took) == 100, out
    print(f"100 moves{' (idle)' if idle else ' under YCSB A'}: p50 {took[49]:.1f} ms, "
          f"p99 {took[98]:.1f} ms, max {took[99]:.1f} ms")
    if load is not None:
        report = load.communicate()[0]
        print("\n".join(l for l in report.splitlines() if "OVERALL" in l))
        sys.exit(load.returncode)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--idle" in sys.argv[3:])
