#!/usr/bin/env bash
# Measures hotkeyd analyze on a shuffled file (lines not in time order, as
# merged logs are) against the exact counter, and against the analyze of
# a git revision BASE in the same run (docs/bench/jsonl.md, "Any order,
# cheaply", "Read once" and "The process floor"); "parallel" is the read
# alone, without analyze's checks, spill and report. The baseline of every
# ratio is exact-lean, the exact counter as a program of its own that links
# the standard library only (internal/cmd/exactcount); "exact" is the same
# counter inside benchcmd, which links all of analyze and so carries its
# process floor (about 17 MB more peak memory), kept for comparison with
# earlier runs. Each run is its own process, the binaries run alternately,
# and the script prints medians of wall seconds, CPU seconds and peak
# resident memory, with each figure's ratio to the baseline per run.
#
#   scripts/bench-analyze.sh [RUNS]            (default 5; EVENTS=N, default 1 850 000)
#   BASE=6fb51fa scripts/bench-analyze.sh 5    (also BASE's analyze)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-5}
events=${EVENTS:-1850000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/benchcmd.new" ./internal/cmd/benchcmd
go build -o "$tmp/exactcount" ./internal/cmd/exactcount
bins=(new)
if [ -n "${BASE:-}" ]; then
	mkdir "$tmp/base-src"
	git archive "$BASE" | tar -x -C "$tmp/base-src"
	# The program moved from internal/bench/benchcmd to internal/cmd/benchcmd.
	base_pkg=./internal/cmd/benchcmd
	[ -d "$tmp/base-src/internal/cmd/benchcmd" ] || base_pkg=./internal/bench/benchcmd
	(cd "$tmp/base-src" && go build -o "$tmp/benchcmd.base" "$base_pkg")
	echo "base: $(git log -1 --format='%h %s' "$BASE")"
	bins=(base new)
fi
"$tmp/benchcmd.new" -generate "$tmp/ordered.jsonl" -events "$events"
# A shuffle that is the same every time.
shuf --random-source=<(yes) "$tmp/ordered.jsonl" >"$tmp/shuffled.jsonl"

for i in $(seq "$runs"); do
	echo "run $i, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	specs=("exact-lean lean 2" "exact new 2")
	for procs in 2 1; do
		for b in "${bins[@]}"; do
			specs+=("analyze $b $procs")
		done
	done
	# analyze --no-incidents: the read and its judgement without the
	# incidents' replay.
	for b in "${bins[@]}"; do
		specs+=("analyze-noinc $b 2" "parallel $b 2")
	done
	for spec in "${specs[@]}"; do
		read -r impl bin procs <<<"$spec"
		if [ "$bin" = lean ]; then
			run=("$tmp/exactcount" "$tmp/shuffled.jsonl")
		else
			run=("$tmp/benchcmd.$bin" -tsv -impl "$impl" "$tmp/shuffled.jsonl")
		fi
		GOMAXPROCS=$procs "${run[@]}" 2>/dev/null |
			awk -v l="$impl.$bin@$procs" -F'\t' 'BEGIN{OFS="\t"} {$1=l; print}' >>"$tmp/runs.tsv"
	done
done

median() { sort -g | awk '{a[NR]=$1} END {printf "%.6f\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
col() { awk -F'\t' -v l="$1" -v c="$2" '$1==l {print $c}' "$tmp/runs.tsv"; }
base=exact-lean.lean@2
ex=$(col $base 4 | median)
exm=$(col $base 5 | median)
exc=$(col $base 6 | median)
printf '%s runs each, %s events (shuffled), load average %s\n' "$runs" "$events" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'baseline %s; vs: its wall time over the run\x27s (median); cpu: its CPU seconds over the run\x27s\n' "$base"
printf '%-22s %8s %8s %8s %9s %8s %8s  %s\n' run "wall s" "CPU s" "RSS MB" "vs" "cpu" "memory" "per run vs (wall)"
for l in $(cut -f1 "$tmp/runs.tsv" | sort -u); do
	s=$(col "$l" 4 | median)
	c=$(col "$l" 6 | median)
	m=$(col "$l" 5 | median)
	per=$(paste <(col $base 4) <(col "$l" 4) | awk '{printf "%.2f ", $1/$2}')
	awk -v l="$l" -v s="$s" -v c="$c" -v m="$m" -v ex="$ex" -v exm="$exm" -v exc="$exc" -v per="$per" \
		'BEGIN {printf "%-22s %8.2f %8.2f %8.1f %8.2fx %7.2fx %7.1f%%  %s\n", l, s, c, m/1e6, ex/s, exc/c, 100*m/exm, per}'
done
# Each run's figures, in the order run, for the record.
echo
printf '%-22s  %s\n' run "per run: wall s / CPU s / peak MB"
for l in $(cut -f1 "$tmp/runs.tsv" | sort -u); do
	printf '%-22s  %s\n' "$l" "$(awk -F'\t' -v l="$l" '$1==l {printf "%.2f/%.2f/%.1f  ", $4, $6, $5/1e6}' "$tmp/runs.tsv")"
done
