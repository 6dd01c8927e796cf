#!/usr/bin/env bash
# Basalt's Bigtable API beside Google's Bigtable emulator, measured by one client in one run:
# a `basalt server` on a fresh local data directory (writes synced to disk, the default
# durability) and `cbtemulator` (in memory), then `basalt bench bigtable` against both.
#
#   scripts/bigtable_bench.sh [DIR] [-- BENCH ARGS...]   # DIR holds the data and logs
#
# BASALT names the basalt binary (default: basalt on PATH); CBTEMULATOR the emulator
# (default: on PATH, else where Debian's google-cloud-cli-bigtable-emulator puts it).
set -euo pipefail
dir=$(realpath -m "${1:-./basalt-bigtable-bench}")
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
basalt=${BASALT:-basalt}
emulator=${CBTEMULATOR:-$(command -v cbtemulator || echo /usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator)}
[ -x "$emulator" ] || { echo "cbtemulator not found: apt-get install google-cloud-cli-bigtable-emulator, or set CBTEMULATOR" >&2; exit 1; }
rm -rf "$dir/data"
mkdir -p "$dir/data" "$dir/logs"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
"$basalt" server --bind 127.0.0.1 --port 0 --info-port 0 --thrift-port 0 --bigtable-port 28086 --rest-port 0 \
  --data-dir "$dir/data" > "$dir/logs/basalt.log" 2>&1 &
pids+=($!)
"$emulator" -host 127.0.0.1 -port 28087 > "$dir/logs/cbtemulator.log" 2>&1 &
pids+=($!)
# The bench waits for both to answer.
"$basalt" bench bigtable --target basalt=127.0.0.1:28086 --target emulator=127.0.0.1:28087 "$@"
