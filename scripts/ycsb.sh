#!/usr/bin/env bash
# YCSB's core workloads A–F through the native API and through the Thrift gateway, by one
# load generator: for each API a `basalt server` on a fresh local data directory (writes
# synced to disk, the default durability), a load, then A to F on the loaded table.
#
#   scripts/ycsb.sh [DIR] [-- YCSB ARGS...]   # DIR holds the data and the logs
#
# YCSB ARGS go to every `basalt bench ycsb` (say `--records 100000 --operations 100000`).
# BASALT names the basalt binary (default: basalt on PATH); APIS the APIs, in order
# (default: "native thrift").
set -euo pipefail
dir=$(realpath -m "${1:-./basalt-ycsb}")
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
basalt=${BASALT:-basalt}
for api in ${APIS:-native thrift}; do
  rm -rf "$dir/data"
  mkdir -p "$dir/data" "$dir/logs"
  coproc server { exec "$basalt" server --bind 127.0.0.1 --port 0 --info-port 0 --bigtable-port 0 \
    --thrift-port 0 --rest-port 0 --data-dir "$dir/data" 2> "$dir/logs/basalt-$api.log"; }
  # The server prints a line per listener once it serves.
  native='' thrift=''
  while { [ -z "$native" ] || [ -z "$thrift" ]; } && read -r line <&"${server[0]}"; do
    case $line in
      *"server listening on "*) native=${line##*listening on }; native=${native%% *} ;;
      *"Thrift gateway on "*) thrift=${line##*Thrift gateway on }; thrift=${thrift%%[ ,]*} ;;
    esac
  done
  [ -n "$native" ] && [ -n "$thrift" ] || { echo "the server did not start; see $dir/logs" >&2; exit 1; }
  addr=$native; [ "$api" = thrift ] && addr=$thrift
  for w in a b c d e f; do
    load=--no-load; [ "$w" = a ] && load=
    echo "== $api $w"
    "$basalt" bench ycsb --api "$api" --server "$addr" --workload "$w" $load "$@" \
      | grep -E '^\[(LOAD|OVERALL)\], Throughput|AverageLatency|99thPercentile'
  done
  kill "$server_PID"; wait "$server_PID" || true
done
