#!/usr/bin/env bash
# Compares the JSON-lines ingest paths on one generated file (about 2 M
# events, 600 k distinct partition keys): the obvious exact counter
# (encoding/json + maps) against hotkeyd's (the jsonl reader into the
# sketches, as hotkeyd analyze). Each run is its own process, so that its
# peak memory (max RSS) is its own; runs alternate between the two and the
# medians and ratios are printed. Figures are recorded in docs/bench/jsonl.md.
#
#   scripts/bench-jsonl.sh [RUNS]        (default 5; EVENTS=N to resize)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
events=${EVENTS:-2000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/benchcmd" ./ingest/jsonl/internal/benchcmd
"$tmp/benchcmd" -generate "$tmp/bench.jsonl" -events "$events"
for i in $(seq "$runs"); do
	for impl in exact fast; do
		"$tmp/benchcmd" -tsv -impl "$impl" "$tmp/bench.jsonl" >>"$tmp/runs.tsv"
	done
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -F'\t' -v impl="$1" -v c="$2" '$1==impl {print $c}' "$tmp/runs.tsv"; }

bytes=$(col fast 3 | head -1)
printf '%s runs per implementation, %s events, %s bytes, GOMAXPROCS=%s, %s\n' \
	"$runs" "$events" "$bytes" "$(nproc)" "$(go version | awk '{print $3}')"
printf '%-6s %10s %12s %14s %12s %12s\n' impl seconds MB/s events/s "max RSS MB" "CPU seconds"
for impl in exact fast; do
	s=$(col "$impl" 4 | median)
	rss=$(col "$impl" 5 | median)
	cpu=$(col "$impl" 6 | median)
	awk -v impl="$impl" -v s="$s" -v b="$bytes" -v e="$events" -v rss="$rss" -v cpu="$cpu" \
		'BEGIN {printf "%-6s %10.2f %12.1f %14.0f %12.1f %12.2f\n", impl, s, b/1e6/s, e/s, rss/1e6, cpu}'
	eval "sec_$impl=$s rss_$impl=$rss cpu_$impl=$cpu"
done
# Ratios of the medians; per-run ratios (same pair of processes) too, to
# see how much a busy machine moved them.
awk -v se="$sec_exact" -v sf="$sec_fast" -v re="$rss_exact" -v rf="$rss_fast" -v ce="$cpu_exact" -v cf="$cpu_fast" \
	'BEGIN {printf "throughput fast/exact: %.2fx (target >= 4x); CPU time exact/fast: %.2fx\npeak memory fast/exact: %.1f%% (target <= 25%%)\n", se/sf, ce/cf, 100*rf/re}'
paste <(col exact 4) <(col fast 4) | awk '{printf "%s%.2fx", (NR>1?", ":"per-run throughput ratios: "), $1/$2} END {print ""}'
