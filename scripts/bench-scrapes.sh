#!/usr/bin/env bash
# Measures concurrent scrapes of the real daemon holding the most series
# /metrics serves by default (300 tables × 3 000 keys, about 21 000
# series) under the shipped GOMEMLIMIT: rounds of N GET /metrics at once
# (OpenMetrics, gzip, as Prometheus asks), how long each took to be
# answered and the peak resident memory meanwhile (internal/cmd/membench
# -scrapes). Prints the medians of COUNT runs as the Markdown table
# docs/limits.md quotes. With BASE, the same runs of that revision too,
# alternating with the checkout's.
#
#   scripts/bench-scrapes.sh                      # 50 at once, 3 rounds, 3 runs
#   SCRAPES=20 ROUNDS=5 COUNT=5 scripts/bench-scrapes.sh
#   BASE=main~3 scripts/bench-scrapes.sh          # against an older revision
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

count=${COUNT:-3}
scrapes=${SCRAPES:-50}
rounds=${ROUNDS:-3}
limit=${GOMEMLIMIT-460MiB}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/base" 2>/dev/null || true; rm -rf "$tmp"' EXIT

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); go: $(go version | cut -d' ' -f3-)"
go build -o "$tmp/membench" ./internal/cmd/membench
go build -o "$tmp/hotkeyd-checkout" ./cmd/hotkeyd
builds=(checkout)
if [[ -n ${BASE:-} ]]; then
	git worktree add --detach --quiet "$tmp/base" "$BASE"
	(cd "$tmp/base" && go build -o "$tmp/hotkeyd-base" ./cmd/hotkeyd)
	builds=(base checkout)
fi

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.0f", b/1048576}'; }
declare -A runs
for _ in $(seq "$count"); do
	for b in "${builds[@]}"; do
		runs[$b]+=$("$tmp/membench" -bin "$tmp/hotkeyd-$b" -profile scrape -tsv -gomemlimit "$limit" -scrapes "$scrapes" -scrape-rounds "$rounds")$'\n'
	done
done

echo
echo "| build | scrapes at once | GOMEMLIMIT | RSS before MiB | peak RSS while scraped MiB | median answer s | p99 s | slowest s | failed |"
echo "|---|---|---|---|---|---|---|---|---|"
for b in "${builds[@]}"; do
	col() { sed '/^$/d' <<<"${runs[$b]}" | cut -f"$1" | median; }
	echo "| $b | $scrapes | ${limit:-none} | $(mib "$(col 6)") | $(mib "$(col 13)") | $(col 9) | $(col 10) | $(col 11) | $(col 12) |"
done
