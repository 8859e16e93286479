#!/usr/bin/env bash
# Measures the live path of this checkout against a base revision, runs
# alternating between the two builds, and prints the medians:
#
#   - ingest: events per second and per CPU-second through the HTTP
#     endpoint and through a followed file, 4 M events with key churn
#     (internal/cmd/membench -ingest http|file), with the cores the daemon used;
#   - the stream decoder: records per CPU-second of the DynamoDB Streams
#     reader's path, GetRecords through the SDK client with the reader's
#     own decoder, mapping and the store (BenchmarkGetRecords,
#     end-to-end-fast, NEW_IMAGE and KEYS_ONLY);
#   - idle: the CPU the daemon uses over 30 s once 1000 tables of 200 keys
#     (max_tables 1000), or 10, were fed and nothing arrives, /metrics
#     scraped every 5 s (internal/cmd/membench -idle 30s).
#
# The load average is printed before each round: the machine may be
# shared, and a round at a high load is worth repeating.
#
#   BASE=7f15725 scripts/bench-live.sh [RUNS]     (default 5)
#   PARTS='idle' BASE=... scripts/bench-live.sh   (some parts only: ingest decoder idle)
#   scripts/bench-live.sh                         (no BASE: this checkout alone)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
base=${BASE:-}
parts=${PARTS:-ingest decoder idle}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT

build() { # build DIR LABEL: the daemon and the reader's benchmarks
	(cd "$1" && go build -o "$tmp/hotkeyd-$2" ./cmd/hotkeyd && go test -c -o "$tmp/streams-$2.test" ./ingest/streams)
}
build . new
builds=new
if [[ -n $base ]]; then
	git worktree add --detach "$tmp/base" "$base" >/dev/null
	build "$tmp/base" base
	builds="base new"
fi
# One harness for both: this checkout's.
go build -o "$tmp/membench" ./internal/cmd/membench

echo "machine: $(nproc) cores; go: $(go version | cut -d' ' -f3-); ${base:+base $(git rev-parse --short "$base"), }new $(git rev-parse --short HEAD)$(git diff --quiet || echo ' (with changes)')"
for i in $(seq "$runs"); do
	echo "round $i: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
	for v in $builds; do
		for p in $parts; do
			case $p in
			ingest)
				for mode in http file; do
					"$tmp/membench" -bin "$tmp/hotkeyd-$v" -ingest "$mode" -tsv | sed "s/^/$v\t/" >>"$tmp/ingest.tsv" ||
						echo "round $i: $v ingest $mode failed" >&2
				done
				;;
			decoder)
				(cd ingest/streams && "$tmp/streams-$v.test" -test.run '^$' -test.bench 'GetRecords/.*/end-to-end-fast' -test.benchtime 2s) |
					awk -v v="$v" '/records\/cpu-s/ {for (f = 1; f <= NF; f++) if ($f == "records/cpu-s") {n = $1; sub(/^BenchmarkGetRecords\//, "", n); sub(/\/end-to-end-fast.*/, "", n); print v "\t" n "\t" $(f-1)}}' >>"$tmp/decoder.tsv"
				;;
			idle)
				for prof in small ten; do
					"$tmp/membench" -bin "$tmp/hotkeyd-$v" -profile "$prof" -max-tables 1000 -idle 30s -tsv |
						awk -F'\t' -v v="$v" 'BEGIN {OFS = "\t"} {print v, $1, $12, $13}' >>"$tmp/idle.tsv" ||
						echo "round $i: $v idle $prof failed" >&2
				done
				;;
			esac
		done
	done
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo
if [[ -s $tmp/ingest.tsv ]]; then
	echo "| ingest (4 M events, key churn) | build | events/s | daemon cores | events per CPU-second | peak RSS MiB |"
	echo "|---|---|---|---|---|---|"
	for mode in http file; do
		for v in $builds; do
			col() { awk -F'\t' -v v="$v" -v m="$mode" -v c="$1" '$1==v && $2==m {print $c}' "$tmp/ingest.tsv" | median; }
			printf '| %s | %s | %.0f | %.2f | %.0f | %.0f |\n' "$mode" "$v" "$(col 5)" "$(col 7)" "$(col 8)" "$(awk -v b="$(col 9)" 'BEGIN {print b/1048576}')"
		done
	done
	echo
fi
if [[ -s $tmp/decoder.tsv ]]; then
	echo "| stream decoder (BenchmarkGetRecords) | build | records per CPU-second |"
	echo "|---|---|---|"
	for b in $(cut -f2 "$tmp/decoder.tsv" | sort -u); do
		for v in $builds; do
			printf '| %s | %s | %.0f |\n' "$b" "$v" "$(awk -F'\t' -v v="$v" -v b="$b" '$1==v && $2==b {print $3}' "$tmp/decoder.tsv" | median)"
		done
	done
	echo
fi
if [[ -s $tmp/idle.tsv ]]; then
	echo "| idle 30 s after the feed | build | CPU, % of a core (median) | per run | RSS at the end MiB |"
	echo "|---|---|---|---|---|"
	for prof in small ten; do
		for v in $builds; do
			cpus=$(awk -F'\t' -v v="$v" -v p="$prof" '$1==v && $2==p {printf "%.2f ", 100*$3}' "$tmp/idle.tsv")
			printf '| %s | %s | %.2f | %s| %.0f |\n' "$prof" "$v" "$(awk -F'\t' -v v="$v" -v p="$prof" '$1==v && $2==p {print 100*$3}' "$tmp/idle.tsv" | median)" "$cpus" \
				"$(awk -F'\t' -v v="$v" -v p="$prof" '$1==v && $2==p {print $4/1048576}' "$tmp/idle.tsv" | median)"
		done
	done
fi
