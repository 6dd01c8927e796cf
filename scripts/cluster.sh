#!/usr/bin/env bash
# A cluster on one machine for trying things out: ZooKeeper (Debian's `zookeeper`
# package), one master and three region servers on a shared directory. Ctrl-C stops it all.
#
#   scripts/cluster.sh [DIR]        # DIR holds the data and logs (default ./basalt-cluster)
#
# Then: basalt shell --server 127.0.0.1:16000
set -euo pipefail
dir=$(realpath -m "${1:-./basalt-cluster}")
basalt=${BASALT:-basalt}
jar=${BASALT_ZOOKEEPER_JAR:-/usr/share/java/zookeeper.jar}
zk_port=${ZK_PORT:-2181}
mkdir -p "$dir/zookeeper" "$dir/storage" "$dir/logs"
[ -f "$jar" ] || { echo "ZooKeeper's jar $jar is missing: apt-get install zookeeper" >&2; exit 1; }
cat > "$dir/zookeeper/zoo.cfg" <<CFG
tickTime=2000
dataDir=$dir/zookeeper/data
clientPort=$zk_port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
CFG
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait' EXIT INT TERM
java -Xmx256m -cp "$jar" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zookeeper/zoo.cfg" \
  > "$dir/logs/zookeeper.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  [ "$( (exec 3<>/dev/tcp/127.0.0.1/$zk_port && echo ruok >&3 && cat <&3) 2>/dev/null)" = imok ] && break
  sleep 0.2
done
common=(--zookeeper "127.0.0.1:$zk_port" --storage "file://$dir/storage")
"$basalt" master "${common[@]}" --port 16000 --info-port 16010 > "$dir/logs/master.log" 2>&1 &
pids+=($!)
for i in 0 1 2; do
  "$basalt" regionserver "${common[@]}" --port $((16020 + i * 100)) --info-port $((16030 + i * 100)) \
    > "$dir/logs/regionserver-$i.log" 2>&1 &
  pids+=($!)
done
echo "ZooKeeper on 127.0.0.1:$zk_port; master on 127.0.0.1:16000 (page http://127.0.0.1:16010/);"
echo "region servers on 16020, 16120, 16220. Logs in $dir/logs. Ctrl-C stops the cluster."
wait
