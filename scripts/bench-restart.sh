#!/usr/bin/env bash
# Measures how long the daemon takes from its start to /-/ready on 28 days
# of history (300 busy tables at the defaults, the database
# BenchmarkDisk28Days builds and keeps, its days ending at the last hour),
# against an empty history directory, in alternating runs; and the first
# 24-hour heatmap of one table asked as soon as it is ready (while the
# writer's first retention pass drops what expired since the database was
# built). Prints each run and the medians (docs/benchmarks.md#history).
#
#   scripts/bench-restart.sh                 # 7 runs each; builds the database when DB has none
#   COUNT=3 DB=/tmp/hist28 scripts/bench-restart.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

count=${COUNT:-7}
db=${DB:-/tmp/hotkeyd-history-28days}
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

if [[ ! -f $db/history.db ]]; then
	echo "building 28 days of history in $db (minutes)"
	go test -run '^$' -bench Disk28Days -benchtime 1x -timeout 1500s ./history -args -disk28days.dir "$db"
fi
go build -o "$work/hotkeyd" ./cmd/hotkeyd
echo 'listen: "127.0.0.1:0"' >"$work/hotkeyd.yaml"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

ms() { date +%s%3N; }
# start DIR PORT: starts the daemon on history DIR, sets ready and heat
# to the ms to /-/ready and to the first heatmap's answer.
start() {
	local dir=$1 port=$2 t0 t1
	t0=$(ms)
	"$work/hotkeyd" run --config.file "$work/hotkeyd.yaml" --web.enable-ingest \
		--web.listen-address "127.0.0.1:$port" --history.path "$dir" 2>"$work/log" &
	pid=$!
	until curl -fso /dev/null "http://127.0.0.1:$port/-/ready"; do
		if (($(ms) - t0 > 30000)); then
			echo "not ready within 30 s" >&2
			cat "$work/log" >&2
			exit 1
		fi
		sleep 0.005
	done
	ready=$(($(ms) - t0))
	t1=$(ms)
	curl -fso /dev/null "http://127.0.0.1:$port/api/v1/history?table=table-150&from=$(date -u -d '-24 hours' +%FT%TZ)&to=$(date -u +%FT%TZ)"
	heat=$(($(ms) - t1))
	kill "$pid"
	wait "$pid" || true
	pid=
}

median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
port=19700
for i in $(seq "$count"); do
	rm -rf "$work/copy" "$work/empty"
	mkdir -p "$work/copy"
	cp "$db/history.db" "$work/copy/" # each run restarts on the same 28 days
	sync
	start "$work/copy" $((port++))
	echo "28 days: ready $ready ms, first 24-hour heatmap $heat ms"
	echo "$ready $heat" >>"$work/days"
	start "$work/empty" $((port++))
	echo "empty:   ready $ready ms"
	echo "$ready" >>"$work/none"
done
echo "median: 28 days ready $(cut -d' ' -f1 "$work/days" | median) ms (first heatmap $(cut -d' ' -f2 "$work/days" | median) ms); empty ready $(median <"$work/none") ms"
