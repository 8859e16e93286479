#!/usr/bin/env bash
# Runs the counting-core benchmarks (sketch/) and prints the medians as
# Markdown tables, the form docs/bench/sketch.md quotes.
#
#   scripts/bench-sketch.sh            # 3 runs of everything (~10 min on 2 cores)
#   COUNT=5 scripts/bench-sketch.sh    # more runs
#   RAW=/tmp/sketch-bench.txt scripts/bench-sketch.sh   # keep the raw output
#
# The trace workloads read ../shared/data/traces beside the repository and
# are skipped, with a message, when it is not there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

count=${COUNT:-3}
raw=${RAW:-$(mktemp)}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "go: $(go version | cut -d' ' -f3-)"
echo "raw output: $raw"
echo

# load prints the load average before each group: on a shared machine the
# parallel figures mean little without it.
load() { echo "load: $(cut -d' ' -f1-3 /proc/loadavg) before $1"; }

{
	# One iteration is a whole workload (10M updates for the Zipf ones).
	load HeavyHitters
	go test -run '^$' -bench 'BenchmarkHeavyHitters' -benchtime 1x -count "$count" -timeout 60m ./sketch/
	load Put
	go test -run '^$' -bench 'BenchmarkPut$|BenchmarkSnapshot' -benchtime 2s -count "$count" ./sketch/
	load PutParallel
	go test -run '^$' -bench 'BenchmarkPutParallel' -benchtime 2s -count "$count" -cpu 1,2 ./sketch/
	load Distinct
	go test -run '^$' -bench 'BenchmarkDistinct' -benchtime 1x -count "$count" ./sketch/
} 2>&1 | tee "$raw" | grep --line-buffered -E '^(Benchmark|--- SKIP|\s+bench_test|load:)' >&2 || true

# medians: for every benchmark line, collect "value unit" pairs and print the
# median of each unit per benchmark name.
awk '
/^Benchmark/ {
	name = $1
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 3; i + 1 <= NF; i += 2) {
		unit = $(i + 1); key = name SUBSEP unit
		if (!(key in cnt)) { units[name] = units[name] " " unit }
		vals[key, ++cnt[key]] = $i
	}
}
function median(key,   c, i, j, t, a) {
	c = cnt[key]
	for (i = 1; i <= c; i++) a[i] = vals[key, i] + 0
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (c % 2) return a[(c + 1) / 2]
	return (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	print "| benchmark | runs | medians |"
	print "|---|---|---|"
	for (k = 1; k <= n; k++) {
		name = order[k]; line = ""
		m = split(substr(units[name], 2), us, " ")
		for (u = 1; u <= m; u++) {
			if (us[u] == "ns/op") continue
			line = line sprintf("%s %g %s", (line == "" ? "" : ","), median(name SUBSEP us[u]), us[u])
		}
		printf "| %s | %d |%s |\n", name, cnt[name SUBSEP "ns/op"], line
	}
	# Scaling of parallel feeding: median updates/s on 2 CPUs over 1 CPU,
	# and CPU per update, which rises when cores contend for cache lines.
	for (k = 1; k <= n; k++) {
		name = order[k]
		if (name !~ /^BenchmarkPutParallel\/[a-z]+$/ || !((name "-2") SUBSEP "Mupdates/s" in cnt)) continue
		one = median(name SUBSEP "Mupdates/s"); two = median((name "-2") SUBSEP "Mupdates/s")
		printf "\nscaling %s: %.2fx (%g -> %g Mupdates/s, %g -> %g cpu-ns/update)", substr(name, 22), two / one, one, two, median(name SUBSEP "cpu-ns/update"), median((name "-2") SUBSEP "cpu-ns/update")
	}
	print ""
}' "$raw"
