#!/usr/bin/env bash
# Measures the memory of the real daemon holding many tables (HTTP ingest,
# reads and writes of every key) with internal/cmd/membench, and prints the
# medians as the Markdown table docs/limits.md quotes, next to the memory
# model (sketch.Config.MemoryFor).
#
#   scripts/bench-memory.sh                        # 3 runs a profile, default max_tables, GOMEMLIMIT 460MiB
#   COUNT=5 scripts/bench-memory.sh                # more runs
#   MAX_TABLES=1000 GOMEMLIMIT= scripts/bench-memory.sh   # another bound, no GOMEMLIMIT
#   PROFILES='large full' scripts/bench-memory.sh  # some profiles only
#   IDLE=30s scripts/bench-memory.sh               # then idle 30 s: CPU and RSS at the end
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

count=${COUNT:-3}
profiles=${PROFILES:-empty small mixed large full}
limit=${GOMEMLIMIT-460MiB}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); go: $(go version | cut -d' ' -f3-)"
go build -o "$bin/hotkeyd" ./cmd/hotkeyd
go build -o "$bin/membench" ./internal/cmd/membench

args=(-bin "$bin/hotkeyd" -tsv -gomemlimit "$limit")
if [[ -n ${MAX_TABLES:-} ]]; then
	args+=(-max-tables "$MAX_TABLES")
fi
if [[ -n ${IDLE:-} ]]; then
	args+=(-idle "$IDLE")
fi
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.0f", b/1048576}'; }

echo
idlehead= idlesep=
if [[ -n ${IDLE:-} ]]; then
	idlehead=" idle CPU % of a core | RSS after idle MiB |" idlesep="---|---|"
fi
echo "| profile | max_tables | GOMEMLIMIT | GOGC | tables tracked | events | RSS MiB | peak RSS MiB | Go heap in use MiB | live heap MiB | model MiB |$idlehead"
echo "|---|---|---|---|---|---|---|---|---|---|---|$idlesep"
for p in $profiles; do
	runs=$(for _ in $(seq "$count"); do "$bin/membench" "${args[@]}" -profile "$p"; done)
	col() { cut -f"$1" <<<"$runs" | median; }
	idle=
	if [[ -n ${IDLE:-} ]]; then
		idle=" $(awk -v c="$(col 12)" 'BEGIN {printf "%.0f", 100*c}') | $(mib "$(col 13)") |"
	fi
	echo "| $p | $(col 2) | ${limit:-none} | ${GOGC:-default} | $(col 4) | $(col 5) | $(mib "$(col 6)") | $(mib "$(col 7)") | $(mib "$(col 8)") | $(mib "$(col 9)") | $(mib "$(col 10)") |$idle"
done
