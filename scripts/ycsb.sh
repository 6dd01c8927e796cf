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
#
# ROUNDS=N compares the two APIs instead: one server serves both, the table is loaded once
# (natively), and each workload runs N rounds through both APIs in turn, native first in odd
# rounds; then each workload's native ÷ Thrift ratio of every round, and their median. On a
# host whose speed drifts from one minute to the next, runs seconds apart on one server
# compare the APIs, where runs on two servers minutes apart compare the host as well.
set -euo pipefail
dir=$(realpath -m "${1:-./basalt-ycsb}")
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
basalt=${BASALT:-basalt}
if [ -n "${ROUNDS:-}" ] && ! { [[ $ROUNDS =~ ^[0-9]+$ ]] && ((10#$ROUNDS > 0)); }; then
  echo "ROUNDS must be a whole number above 0, not '$ROUNDS'" >&2
  exit 2
fi
# A server still running when the script ends, by a failed run or an interrupt, is stopped
# (bash unsets a coproc's PID once it has ended).
server_PID=''
trap '[ -n "${server_PID:-}" ] && kill "$server_PID" 2>/dev/null; wait' EXIT INT TERM

# Starts a server on a fresh data directory, its log named after $1; sets `native` and
# `thrift` to the addresses it serves, and `server_PID`.
start_server() {
  rm -rf "$dir/data"
  mkdir -p "$dir/data" "$dir/logs"
  coproc server { exec "$basalt" server --bind 127.0.0.1 --port 0 --info-port 0 --bigtable-port 0 \
    --thrift-port 0 --rest-port 0 --data-dir "$dir/data" 2> "$dir/logs/basalt-$1.log"; }
  # The server prints a line per listener once it serves.
  native='' thrift=''
  while { [ -z "$native" ] || [ -z "$thrift" ]; } && read -r line <&"${server[0]}"; do
    case $line in
      *"server listening on "*) native=${line##*listening on }; native=${native%% *} ;;
      *"Thrift gateway on "*) thrift=${line##*Thrift gateway on }; thrift=${thrift%%[ ,]*} ;;
    esac
  done
  [ -n "$native" ] && [ -n "$thrift" ] || { echo "the server did not start; see $dir/logs" >&2; exit 1; }
}

# Runs workload $2 through API $1 (more arguments go to it), prints its summary lines and
# leaves its throughput in `ops`.
run() {
  local api=$1 w=$2 addr=$native
  shift 2
  [ "$api" = thrift ] && addr=$thrift
  "$basalt" bench ycsb --api "$api" --server "$addr" --workload "$w" "$@" > "$dir/logs/last.txt"
  grep -E '^\[(LOAD|OVERALL)\], Throughput|AverageLatency|99thPercentile' "$dir/logs/last.txt"
  ops=$(sed -n 's/^\[OVERALL\], Throughput(ops\/sec), //p' "$dir/logs/last.txt")
}

if [ -z "${ROUNDS:-}" ]; then
  for api in ${APIS:-native thrift}; do
    start_server "$api"
    for w in a b c d e f; do
      load=--no-load; [ "$w" = a ] && load=
      echo "== $api $w"
      run "$api" "$w" $load "$@"
    done
    kill "$server_PID"; wait "$server_PID" || true
  done
  exit 0
fi

start_server both
summary=''
for w in a b c d e f; do
  load=--no-load; [ "$w" = a ] && load=
  ratios=''
  for round in $(seq 1 "$ROUNDS"); do
    order='native thrift'; [ $((round % 2)) = 0 ] && order='thrift native'
    for api in $order; do
      echo "== $api $w, round $round"
      run "$api" "$w" $load "$@"
      load=--no-load
      [ "$api" = native ] && native_ops=$ops || thrift_ops=$ops
    done
    ratios="$ratios $(awk -v n="$native_ops" -v t="$thrift_ops" 'BEGIN { printf "%.2f", n / t }')"
  done
  median=$(printf '%s\n' $ratios | sort -n | awk '{ r[NR] = $1 } END {
    printf "%.2f", NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2 }')
  summary="$summary$w: native ÷ Thrift $median (median); rounds:$ratios"$'\n'
done
kill "$server_PID"; wait "$server_PID" || true
echo "== native ÷ Thrift throughput"
printf '%s' "$summary"
