#!/usr/bin/env bash
# HBase's REST and Thrift gateways measured by one client in one run: a `basalt server` on a
# fresh local data directory (writes synced to disk, the default durability) serving both,
# then `basalt bench gateways` against it.
#
#   scripts/gateway_bench.sh [DIR] [-- BENCH ARGS...]   # DIR holds the data and the log
#
# BASALT names the basalt binary (default: basalt on PATH).
set -euo pipefail
dir=$(realpath -m "${1:-./basalt-gateway-bench}")
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
basalt=${BASALT:-basalt}
rm -rf "$dir/data"
mkdir -p "$dir/data" "$dir/logs"
coproc server { exec "$basalt" server --bind 127.0.0.1 --port 0 --info-port 0 --bigtable-port 0 \
  --thrift-port 0 --rest-port 0 --data-dir "$dir/data" 2> "$dir/logs/basalt.log"; }
trap 'kill "$server_PID" 2>/dev/null; wait' EXIT INT TERM
# The server prints a line per listener once it serves; take the two gateways' addresses.
thrift='' rest=''
while { [ -z "$thrift" ] || [ -z "$rest" ]; } && read -r line <&"${server[0]}"; do
  case $line in
    *"Thrift gateway on "*) thrift=${line##*Thrift gateway on }; thrift=${thrift%%[ ,]*} ;;
    *"REST gateway on http://"*) rest=${line##*on http://}; rest=${rest%%/*} ;;
  esac
done
[ -n "$thrift" ] && [ -n "$rest" ] || { echo "the server did not start; see $dir/logs/basalt.log" >&2; exit 1; }
"$basalt" bench gateways --thrift "$thrift" --rest "$rest" "$@"
