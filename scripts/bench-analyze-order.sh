#!/usr/bin/env bash
# Measures hotkeyd analyze on the benchmark file in time order against the
# same lines shuffled, on 1 and on 2 cores (docs/bench/jsonl.md, "Any
# order"): each run its own process (benchcmd), runs alternating, medians
# of wall seconds, CPU seconds and peak resident memory. "analyze" is the
# whole of hotkeyd analyze (a second read of the reported keys' seconds
# when the file does not run in time); "parallel" is the first read alone,
# the baseline of the same run.
#
#   scripts/bench-analyze-order.sh [RUNS]   (default 3; EVENTS=N to resize)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-3}
events=${EVENTS:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/benchcmd" ./internal/cmd/benchcmd
"$tmp/benchcmd" -generate "$tmp/ordered.jsonl" -events "$events"
# A shuffle that is the same every time.
shuf --random-source=<(yes) "$tmp/ordered.jsonl" >"$tmp/shuffled.jsonl"

for i in $(seq "$runs"); do
	for file in ordered shuffled; do
		for procs in 1 2; do
			for impl in parallel analyze; do
				GOMAXPROCS=$procs "$tmp/benchcmd" -tsv -impl "$impl" "$tmp/$file.jsonl" |
					awk -v l="$impl@$procs $file" -F'\t' 'BEGIN{OFS="\t"} {$1=l; print}' >>"$tmp/runs.tsv"
			done
		done
	done
done
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf '%s runs each, %s events, load average %s\n' "$runs" "$events" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-24s %10s %10s %10s %10s\n' run seconds Mevents/s "CPU s" "max RSS MB"
for label in $(cut -f1 "$tmp/runs.tsv" | tr ' ' '~' | sort -u); do
	l=${label//\~/ }
	s=$(awk -F'\t' -v l="$l" '$1==l {print $4}' "$tmp/runs.tsv" | median)
	c=$(awk -F'\t' -v l="$l" '$1==l {print $6}' "$tmp/runs.tsv" | median)
	m=$(awk -F'\t' -v l="$l" '$1==l {print $5/1e6}' "$tmp/runs.tsv" | median)
	printf '%-24s %10.2f %10.2f %10.2f %10.0f\n' "$l" "$s" "$(awk -v e="$events" -v s="$s" 'BEGIN {print e/s/1e6}')" "$c" "$m"
done
