#!/usr/bin/env bash
# Compares the JSON-lines analyze paths on one generated file (about 2 M
# events, 600 k distinct partition keys): the obvious exact counter
# (encoding/json + maps), hotkeyd's reader on one core as analyze ran it
# before it read on every core (fast), and analyze's path on every core
# (parallel: ingest/parallel), the latter at GOMAXPROCS 1, 2, 4, ... up to
# the cores available. Each run is its own process, so that its peak
# memory (max RSS) is its own; runs alternate between the implementations
# and the medians and ratios are printed. Figures are recorded in
# docs/bench/jsonl.md and docs/benchmarks.md.
#
#   scripts/bench-jsonl.sh [RUNS]        (default 5; EVENTS=N to resize)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
events=${EVENTS:-2000000}
cores=$(nproc)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/benchcmd" ./internal/cmd/benchcmd
"$tmp/benchcmd" -generate "$tmp/bench.jsonl" -events "$events"

# The implementations, as label:impl:GOMAXPROCS; parallel at every power of
# two up to the cores, and at the cores.
impls="exact:exact:$cores fast:fast:$cores"
for ((p = 1; p < cores; p *= 2)); do
	impls="$impls parallel@$p:parallel:$p"
done
impls="$impls parallel@$cores:parallel:$cores"

for i in $(seq "$runs"); do
	for spec in $impls; do
		IFS=: read -r label impl procs <<<"$spec"
		GOMAXPROCS=$procs "$tmp/benchcmd" -tsv -impl "$impl" "$tmp/bench.jsonl" |
			awk -v l="$label" 'BEGIN {OFS = "\t"} {$1 = l; print}' >>"$tmp/runs.tsv"
	done
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
col() { awk -F'\t' -v impl="$1" -v c="$2" '$1==impl {print $c}' "$tmp/runs.tsv"; }

bytes=$(col exact 3 | head -1)
printf '%s runs per implementation, %s events, %s bytes, %s cores, %s, load average %s\n' \
	"$runs" "$events" "$bytes" "$cores" "$(go version | awk '{print $3}')" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %9s %9s %12s %11s %11s %11s %11s\n' impl seconds MB/s events/s "max RSS MB" "CPU sec" "vs exact" "RSS/exact"
sec_exact=$(col exact 4 | median)
rss_exact=$(col exact 5 | median)
sec_one=
for spec in $impls; do
	label=${spec%%:*}
	s=$(col "$label" 4 | median)
	rss=$(col "$label" 5 | median)
	cpu=$(col "$label" 6 | median)
	[ "$label" = parallel@1 ] && sec_one=$s
	awk -v impl="$label" -v s="$s" -v b="$bytes" -v e="$events" -v rss="$rss" -v cpu="$cpu" -v se="$sec_exact" -v re="$rss_exact" \
		'BEGIN {printf "%-12s %9.2f %9.1f %12.0f %11.1f %11.2f %10.2fx %10.1f%%\n", impl, s, b/1e6/s, e/s, rss/1e6, cpu, se/s, 100*rss/re}'
done
# Scaling: each parallel@P against parallel@1; and the headline's per-run
# ratios (the same round of processes), to see how much a busy machine
# moved them.
for spec in $impls; do
	label=${spec%%:*}
	case $label in parallel@*)
		awk -v impl="$label" -v s="$(col "$label" 4 | median)" -v one="$sec_one" \
			'BEGIN {printf "scaling %s: %.2fx parallel@1\n", impl, one/s}'
		;;
	esac
done
paste <(col exact 4) <(col "parallel@$cores" 4) | awk '{printf "%s%.2fx", (NR>1?", ":"per-run throughput parallel/exact: "), $1/$2} END {print ""}'
paste <(col exact 5) <(col "parallel@$cores" 5) | awk '{printf "%s%.1f%%", (NR>1?", ":"per-run memory parallel/exact: "), 100*$2/$1} END {print ""}'
echo "targets: parallel@$cores >= 8x exact's throughput at <= 15% of its memory"
